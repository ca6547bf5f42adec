"""deploy/grading/: the collect Job, the volumes, the grading indexed Job and its NetworkPolicy, and the merge.

Every manifest is validated against the Kubernetes JSON schemas that the
``kubernetes-validate`` package bundles (nothing is downloaded); each pod's
shell command, and the README's merge command, is run with a stand-in
``fleetlab`` that prints its arguments, which the real ``collect``, ``grade``
and ``gradebook merge`` commands then parse. The grading pod's own command is
also run with the real ``fleetlab`` where no sandbox can be made: it refuses.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tomllib
from pathlib import Path

import click
import kubernetes_validate
import nbformat
import pytest
import yaml
from fleetlab_instructor.grade.submissions import Shard
from fleetlab_instructor.report.gradebook import shard_path
from nbformat.v4 import new_code_cell, new_notebook

from fleetlab.cli import build_cli, main
from fleetlab.course.judge import sandbox

FOLDER = Path(__file__).resolve().parents[1] / "deploy" / "grading"
MANIFEST = FOLDER / "job.yaml"
COLLECT = FOLDER / "collect.yaml"
VOLUMES = FOLDER / "volumes.yaml"
SHELL = FOLDER / "shell.yaml"
README = FOLDER / "README.md"
OLDEST = "1.33.0"  # backoffLimitPerIndex and maxFailedIndexes are GA, and user namespaces on by default, from 1.33


def documents(path: Path) -> list[dict]:
    """The manifests a file holds, in order."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def only(path: Path, kind: str) -> dict:
    """The one manifest of ``kind`` in ``path``."""
    [found] = [doc for doc in documents(path) if doc["kind"] == kind]
    return found


def job() -> dict:
    return only(MANIFEST, "Job")


def network_policy() -> dict:
    return only(MANIFEST, "NetworkPolicy")


def pod_spec(manifest: dict) -> dict:
    """The pod spec of a Job (its template's) or of a Pod."""
    return manifest["spec"]["template"]["spec"] if manifest["kind"] == "Job" else manifest["spec"]


def container(manifest: dict) -> dict:
    [single] = pod_spec(manifest)["containers"]
    return single


def every_manifest() -> list[tuple[str, dict]]:
    """(file name and kind, manifest) for every manifest of deploy/grading/."""
    found = [(f"{path.name}:{doc['kind']}", doc) for path in sorted(FOLDER.glob("*.yaml")) for doc in documents(path)]
    assert {name for name, _ in found} >= {"job.yaml:Job", "job.yaml:NetworkPolicy", "collect.yaml:Job",
                                           "volumes.yaml:PersistentVolumeClaim", "shell.yaml:Pod"}
    return found


@pytest.mark.parametrize("version", [OLDEST, kubernetes_validate.utils.latest_version()])
@pytest.mark.parametrize(("name", "manifest"), every_manifest(), ids=[name for name, _ in every_manifest()])
def test_every_manifest_is_valid_against_the_kubernetes_schema(version, name, manifest):
    kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize(("path", "value"), [
    (("spec", "completionMode"), ["Indexed"]),
    (("spec", "completions"), "four"),
    (("spec", "template", "spec", "restartPolicy"), ["Never"]),
    (("spec", "parallelsm"), 4),  # a misspelt field: the strict schema refuses it
    (("spec", "template", "spec", "hostUser"), False),
])
def test_the_schema_refuses_a_broken_job(path, value):
    broken = job()
    where = broken
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, OLDEST, strict=True)


def test_the_job_is_indexed_and_its_shard_count_is_its_completions():
    spec = job()["spec"]
    env = {var["name"]: var["value"] for var in container(job())["env"]}
    assert spec["completionMode"] == "Indexed" and spec["template"]["spec"]["restartPolicy"] == "Never"
    assert int(env["SHARDS"]) == spec["completions"] >= spec["parallelism"] >= 1
    mounts = {mount["mountPath"]: mount.get("readOnly", False) for mount in container(job())["volumeMounts"]}
    assert mounts == {"/submissions": True, "/grades": False}
    claims = {volume["name"]: volume["persistentVolumeClaim"] for volume in spec["template"]["spec"]["volumes"]}
    assert claims["submissions"] == {"claimName": "fleetlab-submissions", "readOnly": True}
    assert claims["grades"]["claimName"] == "fleetlab-grades"


def pod_env(manifest: dict | None = None) -> dict[str, str]:
    """A pod's plain environment variables (those read from a Secret left out)."""
    return {var["name"]: var["value"] for var in container(manifest or job())["env"] if "value" in var}


def stand_in(folder: Path) -> dict[str, str]:
    """An environment whose ``fleetlab`` prints its arguments, one a line."""
    fake = folder / "fleetlab"
    fake.write_text('#!/bin/sh\nfor arg in "$@"; do printf "%s\\n" "$arg"; done\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}/usr/bin:/bin"}


def test_each_pod_grades_its_own_shard_of_the_run_into_the_runs_folder(tmp_path):
    pod, env = container(job()), pod_env()
    shards, run = int(env["SHARDS"]), env["RUN"]
    grade = build_cli().commands["grade"]
    seen_shards, seen_outs = [], set()
    for index in range(job()["spec"]["completions"]):
        ran = subprocess.run([*pod["command"], *pod["args"]], capture_output=True, text=True, timeout=30, check=True,
                             env={**stand_in(tmp_path), "JOB_COMPLETION_INDEX": str(index), "SHARDS": str(shards),
                                  "RUN": run})
        argv = ran.stdout.splitlines()
        assert argv[0] == "grade"
        context = grade.make_context("grade", argv[1:])
        assert context.params["paths"] == (Path(f"/submissions/{run}"),) and context.params["run"] == run
        assert not context.params["unsandboxed"]
        seen_shards.append(context.params["shard"])
        seen_outs.add(context.params["out"])
        assert context.params["feedback"] == Path(f"/grades/{run}/feedback")
    assert seen_shards == [Shard(index, shards) for index in range(1, shards + 1)]
    assert len(seen_outs) == shards and all(out.parent == Path(f"/grades/{run}") for out in seen_outs)


def test_the_readmes_merge_command_names_exactly_the_shard_files_the_pods_write(tmp_path):
    [command] = [block for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.DOTALL)
                 if "gradebook merge" in block]
    ran = subprocess.run(["/bin/bash", "-c", command], env=stand_in(tmp_path), capture_output=True, text=True,
                         timeout=30, check=True)
    argv = ran.stdout.splitlines()
    assert argv[:2] == ["gradebook", "merge"]
    context = build_cli().commands["gradebook"].commands["merge"].make_context("merge", argv[2:])
    env = pod_env()
    run, shards, folder = env["RUN"], int(env["SHARDS"]), Path(f"/grades/{env['RUN']}")
    assert list(context.params["shards"]) == [shard_path(folder, run, Shard(i, shards)) for i in range(1, shards + 1)]
    assert context.params["out"].parent == folder and context.params["report"].parent == folder


def pod_argv(manifest: dict, folder: Path, **env: str) -> list[str]:
    """The arguments a pod of ``manifest`` gives ``fleetlab``, its shell command run with the stand-in."""
    pod = container(manifest)
    ran = subprocess.run([*pod["command"], *pod["args"]], capture_output=True, text=True, timeout=30, check=True,
                         env={**stand_in(folder), **pod_env(manifest), **env})
    return ran.stdout.splitlines()


def selects(policy: dict, manifest: dict) -> bool:
    """Whether a NetworkPolicy's pod selector (match labels only) picks the pods of a Job or a Pod."""
    labels = (manifest["spec"]["template"] if manifest["kind"] == "Job" else manifest)["metadata"]["labels"]
    wanted = policy["spec"]["podSelector"]
    assert set(wanted) == {"matchLabels"}, "the selector is read here by its match labels only"
    return wanted["matchLabels"].items() <= labels.items()


def test_the_grading_pods_have_no_network_in_or_out_and_the_collect_pod_keeps_its_own():
    """The policy selects the grading pods, names both directions and allows nothing; collect reaches the hub."""
    policy = network_policy()
    assert selects(policy, job())
    assert not selects(policy, only(COLLECT, "Job")) and not selects(policy, only(SHELL, "Pod"))
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert not policy["spec"].get("ingress") and not policy["spec"].get("egress")
    assert [doc["kind"] for doc in documents(MANIFEST)] == ["NetworkPolicy", "Job"], \
        "the policy comes first, so that no grading pod starts before it"


def test_the_grading_pod_may_make_the_sandbox_and_nothing_more():
    """A user namespace of the pod's own, an unmasked /proc and profiles that let unshare(2) and mount(2)
    through; as a non-root user, without capabilities, privilege escalation or an API token."""
    pod_spec = job()["spec"]["template"]["spec"]
    context, security = pod_spec["securityContext"], container(job())["securityContext"]
    assert pod_spec["hostUsers"] is False and pod_spec["automountServiceAccountToken"] is False
    assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
    assert security["procMount"] == "Unmasked"
    assert security["seccompProfile"]["type"] in {"Unconfined", "Localhost"}
    assert security["appArmorProfile"]["type"] in {"Unconfined", "Localhost"}
    assert security["allowPrivilegeEscalation"] is False and security["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in security and "add" not in security["capabilities"]


def test_every_pod_runs_the_grader_image_the_readme_builds_as_its_user():
    """fleetlab-grader tagged with the course's version, as the README's build line tags it, run as the uid
    deploy/grading/Dockerfile creates."""
    version = tomllib.loads((FOLDER.parents[1] / "pyproject.toml").read_text())["project"]["version"]
    image = f"fleetlab-grader:{version}"
    assert f"docker build -f deploy/grading/Dockerfile -t $REGISTRY/{image} ." in README.read_text()
    user = re.search(r"^USER (\d+)", (FOLDER / "Dockerfile").read_text(), re.MULTILINE)[1]
    for manifest in (job(), only(COLLECT, "Job"), only(SHELL, "Pod")):
        assert container(manifest)["image"] == image
        assert pod_spec(manifest)["securityContext"]["runAsUser"] == int(user)


def test_the_jobs_mount_the_claims_volumes_yaml_makes():
    made = {doc["metadata"]["name"] for doc in documents(VOLUMES) if doc["kind"] == "PersistentVolumeClaim"}
    for manifest in (job(), only(COLLECT, "Job"), only(SHELL, "Pod")):
        volumes = pod_spec(manifest)["volumes"]
        used = {volume["persistentVolumeClaim"]["claimName"] for volume in volumes}
        assert used <= made, used - made


@pytest.mark.parametrize("on_time", ["", "day1-deadline"])
def test_the_collect_pod_writes_the_folder_the_grading_pods_read(tmp_path, on_time):
    """collect's --out is /submissions/RUN on the submissions claim, mounted writable, the folder grade reads for
    the same RUN; ON_TIME names the deadline's snapshot beside it; the token comes from a Secret."""
    collect_job = only(COLLECT, "Job")
    run = pod_env(collect_job)["RUN"]
    argv = pod_argv(collect_job, tmp_path, ON_TIME=on_time)
    assert argv[0] == "collect"
    params = build_cli().commands["collect"].make_context("collect", argv[1:]).params
    assert params["out"] == Path(f"/submissions/{run}") and params["run"] == run and params["hub"]
    assert params["on_time"] == (Path(f"/submissions/{on_time}") if on_time else None)
    grade_argv = pod_argv(job(), tmp_path, JOB_COMPLETION_INDEX="0", RUN=run)
    assert build_cli().commands["grade"].make_context("grade", grade_argv[1:]).params["paths"] == (params["out"],)
    [mount] = container(collect_job)["volumeMounts"]
    assert mount["mountPath"] == "/submissions" and not mount.get("readOnly")
    [token] = [var for var in container(collect_job)["env"] if var["name"] == "JUPYTERHUB_API_TOKEN"]
    assert set(token) == {"name", "valueFrom"} and "secretKeyRef" in token["valueFrom"]


def test_a_grading_pod_where_no_sandbox_can_be_made_refuses_and_writes_no_gradebook(tmp_path, monkeypatch, capsys):
    """The pod's own command, run with the real fleetlab (its volumes moved under tmp_path) where the sandbox's
    probe fails, as a seccomp profile refusing unshare(2) makes it: exit 2, saying why; nothing graded."""
    run = pod_env()["RUN"]
    learner = tmp_path / "submissions" / run / "ann"
    learner.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_code_cell("planes = {}")]), learner / "00_orientation.ipynb")
    argv = [arg.replace("/submissions", str(tmp_path / "submissions")).replace("/grades", str(tmp_path / "grades"))
            for arg in pod_argv(job(), tmp_path, JOB_COMPLETION_INDEX="0")]
    monkeypatch.setattr(sandbox, "probe", lambda: "unshare: Operation not permitted")
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert "cannot be sealed here" in said and "unshare: Operation not permitted" in said
    written = [path for path in tmp_path.joinpath("grades").rglob("*") if path.suffix in {".csv", ".json", ".md"}]
    assert not written, written


def readme_commands() -> list[str]:
    """Every ``fleetlab`` command of the README's code blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```(?:sh|console)\n(.*?)```", README.read_text(), re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.strip().startswith("fleetlab ")]
    return commands


def test_every_fleetlab_command_of_the_readme_is_one_the_cli_takes(tmp_path):
    """Each, run by bash with the pods' variables and a stand-in ``fleetlab``, parses with the real command."""
    commands = readme_commands()
    assert {command.split()[1] for command in commands} >= {"grade", "gradebook", "feedback"}
    env = {**stand_in(tmp_path), **pod_env(), "JOB_COMPLETION_INDEX": "0", "HUB": "http://proxy-public"}
    for command in commands:
        argv = subprocess.run(["/bin/bash", "-c", command], env=env, capture_output=True, text=True, timeout=30,
                              check=True).stdout.splitlines()
        group = build_cli()
        while isinstance(group, click.Group):
            group, argv = group.commands[argv[0]], argv[1:]
        group.make_context(group.name, argv)

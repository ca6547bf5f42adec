"""deploy/grading/: a valid batch/v1 indexed Job whose pods grade shards 1/N..N/N of one run, and the merge of them.

The manifest is validated against the Kubernetes JSON schemas that the
``kubernetes-validate`` package bundles (nothing is downloaded); each pod's
shell command, and the README's merge command, is run with a stand-in
``fleetlab`` that prints its arguments, which the real ``grade`` and
``gradebook merge`` commands then parse.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from fleetlab_instructor.report.gradebook import shard_path
from fleetlab_instructor.grade.submissions import Shard

from fleetlab.cli import build_cli

MANIFEST = Path(__file__).resolve().parents[1] / "deploy" / "grading" / "job.yaml"
README = MANIFEST.with_name("README.md")
OLDEST = "1.33.0"  # backoffLimitPerIndex and maxFailedIndexes are GA from Kubernetes 1.33


def job() -> dict:
    return yaml.safe_load(MANIFEST.read_text())


def container(manifest: dict) -> dict:
    [only] = manifest["spec"]["template"]["spec"]["containers"]
    return only


@pytest.mark.parametrize("version", [OLDEST, kubernetes_validate.utils.latest_version()])
def test_the_job_is_valid_against_the_kubernetes_schema(version):
    kubernetes_validate.validate(job(), version, strict=True)


@pytest.mark.parametrize(("path", "value"), [
    (("spec", "completionMode"), ["Indexed"]),
    (("spec", "completions"), "four"),
    (("spec", "template", "spec", "restartPolicy"), ["Never"]),
    (("spec", "parallelsm"), 4),  # a misspelt field: the strict schema refuses it
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


def pod_env() -> dict[str, str]:
    return {var["name"]: var["value"] for var in container(job())["env"]}


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
        assert context.params["paths"] == (Path("/submissions"),) and context.params["run"] == run
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

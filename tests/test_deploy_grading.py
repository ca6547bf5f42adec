"""deploy/grading/job.yaml: a valid batch/v1 indexed Job whose pods grade shards 1/N..N/N, each to its own CSV.

The manifest is validated against the Kubernetes JSON schemas that the
``kubernetes-validate`` package bundles (nothing is downloaded); each pod's
shell command is run with a stand-in ``fleetlab`` that prints its arguments,
which the real ``grade`` command then parses.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from fleetlab_instructor.grading.submissions import Shard

from fleetlab.cli import build_cli

MANIFEST = Path(__file__).resolve().parents[1] / "deploy" / "grading" / "job.yaml"
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


def test_each_pod_grades_its_own_shard_into_its_own_gradebook(tmp_path):
    stand_in = tmp_path / "fleetlab"
    stand_in.write_text('#!/bin/sh\nfor arg in "$@"; do printf "%s\\n" "$arg"; done\n')
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    pod = container(job())
    shards = int(next(var["value"] for var in pod["env"] if var["name"] == "SHARDS"))
    grade = build_cli().commands["grade"]
    seen_shards, seen_outs = [], set()
    for index in range(job()["spec"]["completions"]):
        env = {"PATH": f"{tmp_path}{os.pathsep}/usr/bin:/bin", "JOB_COMPLETION_INDEX": str(index),
               "SHARDS": str(shards)}
        ran = subprocess.run([*pod["command"], *pod["args"]], env=env, capture_output=True, text=True, timeout=30,
                             check=True)
        argv = ran.stdout.splitlines()
        assert argv[0] == "grade"
        context = grade.make_context("grade", argv[1:])
        assert context.params["paths"] == (Path("/submissions"),)
        seen_shards.append(context.params["shard"])
        seen_outs.add(context.params["out"])
        assert context.params["feedback"] == Path("/grades/feedback")
    assert seen_shards == [Shard(index, shards) for index in range(1, shards + 1)]
    assert len(seen_outs) == shards and all(out.parent == Path("/grades") for out in seen_outs)

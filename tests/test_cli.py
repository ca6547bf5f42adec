import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fleetlab.cli import build_parser, main


@pytest.mark.parametrize("backend", ["moto", "moto-server"])
def test_demo_runs_the_whole_pipeline(backend, capsys):
    code = main(["demo", "--backend", backend, "--events", "4", "--orchestrated", "1", "--crash"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "5 steps: 5 effects, 0 duplicated, 0 lost, 0 unsettled" in out
    assert "execution_succeeded" in out
    assert "crashed" in out  # the injected crash shows in its trace


def test_real_aws_is_refused_without_the_opt_in():
    env = {k: v for k, v in os.environ.items() if k != "FLEETLAB_ALLOW_REAL_AWS"}
    env["FLEETLAB_BACKEND"] = "aws"
    done = subprocess.run(
        [sys.executable, "-m", "fleetlab.cli", "demo"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "FLEETLAB_ALLOW_REAL_AWS=1" in done.stderr


def test_an_unknown_backend_is_named(monkeypatch, capsys):
    monkeypatch.setenv("FLEETLAB_BACKEND", "mtoo")
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert "'mtoo'" in err and "moto-server" in err


def test_a_bad_flag_names_the_flag(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--events", "-3"])
    assert exited.value.code == 2
    assert "--events: must not be negative" in capsys.readouterr().err


def test_real_aws_without_credentials_says_what_to_do(tmp_path):
    """Opted in but no credentials: a clear message, and no request leaves the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        FLEETLAB_BACKEND="aws",
        FLEETLAB_ALLOW_REAL_AWS="1",
        HOME=str(tmp_path),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    done = subprocess.run(
        [sys.executable, "-m", "fleetlab.cli", "demo"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "could not identify the AWS account" in done.stderr
    assert "aws configure" in done.stderr


def test_the_readme_command_table_lists_every_subcommand_and_no_other():
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    documented = {match.group(1) for match in re.finditer(r"^\| `fleetlab ([a-z-]+)", table, re.MULTILINE)}
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert documented == set(subparsers.choices)


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [("--cell-timeout", "0", "must be a positive"), ("--notebook-timeout", "soon", "must be a number"),
     ("--grading-timeout", "-5", "must be a positive"), ("--workers", "0", "must be at least 1")],
)
def test_grade_flags_are_checked_naming_the_flag(flag, value, problem, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["grade", "nb.ipynb", flag, value])
    assert exited.value.code == 2
    assert f"argument {flag}: {problem}" in capsys.readouterr().err

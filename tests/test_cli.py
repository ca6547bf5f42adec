import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fleetlab.backends.prices import load_calls
from fleetlab.cli import build_cli, main
from fleetlab.course.grading.registry import shipped_labs


@pytest.mark.parametrize("backend", ["moto", "moto-server"])
def test_demo_runs_the_whole_pipeline(backend, capsys):
    code = main(["demo", "--backend", backend, "--events", "4", "--orchestrated", "1", "--crash"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "5 steps: 5 effects, 0 duplicated, 0 lost, 0 unsettled" in out
    assert "execution_succeeded" in out
    assert "crashed" in out  # the injected crash shows in its trace
    assert "took (lab time)" in out
    lab_time, wall_time = re.search(r"^lab time ([\d.]+) s \(virtual clock, waits pass at once\); "
                                    r"wall time ([\d.]+) s$", out, re.MULTILINE).groups()
    assert float(lab_time) > float(wall_time)  # the crashed step's visibility timeout passed at once


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
    assert main(["demo", "--events", "-3"]) == 2
    assert "'--events': must not be negative" in capsys.readouterr().err


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
    assert documented == set(build_cli().commands)


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [("--cell-timeout", "0", "must be a positive"), ("--notebook-timeout", "soon", "must be a number"),
     ("--grading-timeout", "-5", "must be a positive"), ("--workers", "0", "must be at least 1")],
)
def test_grade_flags_are_checked_naming_the_flag(flag, value, problem, capsys):
    assert main(["grade", "nb.ipynb", flag, value]) == 2
    assert f"'{flag}': {problem}" in capsys.readouterr().err


def test_progress_of_an_unknown_lab_lists_the_labs_with_checks(capsys):
    assert main(["progress", "--lab", "99"]) == 2
    captured = capsys.readouterr()
    assert "'--lab': no lab '99' has checks; choose from 00, 01, 02" in captured.err
    assert ", ".join(shipped_labs()) in captured.err
    assert captured.out == ""


def test_progress_and_cost_take_a_lab_by_one_digit_or_two(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))
    assert main(["progress", "--lab", "3"]) == 0
    out = capsys.readouterr().out
    assert "lab 03" in out and "03.redrive" in out and "lab 02" not in out
    assert main(["cost", "3"]) == 0
    by_one_digit = capsys.readouterr().out
    assert main(["cost", "03"]) == 0
    assert by_one_digit == capsys.readouterr().out != ""


def test_progress_names_its_file_as_results_only_once_the_file_exists(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))
    assert main(["progress", "--lab", "00"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"no results yet: each check() run in a notebook records its result in {tmp_path / 'progress.json'}"
    (tmp_path / "progress.json").write_text("{}", encoding="utf-8")
    assert main(["progress", "--lab", "00"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"results from {tmp_path / 'progress.json'}"


def test_cost_of_an_unknown_subject_lists_the_counted_ones(capsys):
    assert main(["cost", "02", "99"]) == 2
    captured = capsys.readouterr()
    assert "no calls are counted for '99'; choose from 00, 01" in captured.err
    assert ", ".join(load_calls()["subjects"]) in captured.err and "demo" in captured.err
    assert captured.out == ""  # not even lab 02's estimate


def test_capacity_in_an_unknown_region_names_the_flag_and_the_regions_known(capsys):
    assert main(["capacity", "--conversations-per-minute", "500", "--steps", "15", "--step-seconds", "90",
                 "--region", "mars-1"]) == 2
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert err.startswith("fleetlab capacity: --region: unknown AWS region 'mars-1' (choose from ")
    assert "eu-central-1" in err and "us-east-1" in err
    assert captured.out == ""  # no answer at a made-up refill rate

"""The course's notebook conventions, on the fixture lab, exactly as ``make test`` runs them."""

import os
import subprocess
import sys

from .conftest import FIXTURES

SANITIZER = FIXTURES.parents[1] / "nbval_sanitize.cfg"


def run(args, tmp_path, **env):
    environment = {**os.environ, "PYTHONPATH": str(FIXTURES), "FLEETLAB_HOME": str(tmp_path), **env}
    return subprocess.run(
        [sys.executable, *args], env=environment, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )


def pytest_args(*args):
    return ["-m", "pytest", "-p", "no:cacheprovider", "--noconftest", "-q", *args]


def test_the_instructor_notebook_passes_strict_nbval_with_every_check_passing(tmp_path):
    done = run(
        pytest_args("--nbval", "--nbval-sanitize-with", str(SANITIZER), str(FIXTURES / "lab" / "solutions")),
        tmp_path,
        FLEETLAB_EXPECT_CHECKS="pass",
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout


def test_the_student_notebook_runs_without_error_and_every_check_says_not_yet(tmp_path):
    student = FIXTURES / "lab" / "99_fixture.ipynb"
    done = run(pytest_args("--nbval-lax", str(student)), tmp_path, FLEETLAB_EXPECT_CHECKS="not-yet")
    assert done.returncode == 0, done.stdout[-3000:]


def test_assign_check_passes_on_the_committed_student_notebook(tmp_path):
    lab = FIXTURES / "lab"
    args = ["-m", "fleetlab.cli", "assign", "--check", "--solutions", str(lab / "solutions"), "--out", str(lab)]
    done = run(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout

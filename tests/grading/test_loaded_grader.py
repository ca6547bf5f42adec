"""A right answer to every check passes every case with the machine loaded as a full-speed grader loads it.

The instructor's solution notebooks are graded with more workers than the
machine has cores, so kernels and judges compete for the CPU. A check's time
is measured on its own code (``runner.Budget``), so a busy machine must never
turn a right answer into a fail. It takes minutes: it runs only when asked for,
``python -m pytest -m loaded_grader tests/grading/test_loaded_grader.py``.
"""

import os
from pathlib import Path

import pytest
from fleetlab_instructor.grade.grade import grade_notebooks

SOLUTIONS = Path(__file__).resolve().parents[2] / "labs" / "solutions"

pytestmark = pytest.mark.loaded_grader


def test_every_solution_scores_every_point_with_more_graders_than_cores():
    paths = sorted(SOLUTIONS.glob("*.ipynb"))
    workers = (os.cpu_count() or 1) + 2
    rows = grade_notebooks(paths, grader_env=dict(os.environ), workers=workers)
    assert [row.error for row in rows] == [""] * len(paths)
    for row in rows:
        assert row.scores == row.max_points, row.notebook
        failed = [(check_id, case) for check_id, check in row.checks.items() for case in check.cases
                  if case.status != "pass"]
        assert failed == [], row.notebook

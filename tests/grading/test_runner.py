import re
import threading
import time
from dataclasses import dataclass

import pytest

from fleetlab.grading import Case, CaseOutcome, get_check, register, run_check

from .answers import body_is_ellipsis, divides, not_written, spins


@dataclass(frozen=True)
class Number(Case):
    value: int


def doubles(answer, case, ctx):
    got = answer(case.value)
    return CaseOutcome(got == 2 * case.value, f"double({case.value}) returned {got!r}, not {2 * case.value}")


register(
    "98.double",
    title="Double a number",
    points=2,
    public=[Number("one", 1), Number("two", 2)],
    hidden=[Number("minus three", -3)],
    timeout=1.0,
)(doubles)
DOUBLE = get_check("98.double")


def test_a_right_answer_passes_with_full_points():
    result = run_check(DOUBLE, lambda x: 2 * x, include_hidden=True)
    assert (result.status, result.points, result.max_points, result.passed) == ("pass", 2, 2, True)
    assert [(case.name, case.hidden) for case in result.cases] == [
        ("one", False),
        ("two", False),
        ("minus three", True),
    ]


def test_the_notebook_runs_only_public_cases_and_says_grading_adds_more():
    result = run_check(DOUBLE, lambda x: 2 * x if x > 0 else 0)
    assert result.passed
    assert all(not case.hidden for case in result.cases)
    assert result.diagnosis == "all 2 cases pass; grading adds hidden cases"


def test_a_wrong_answer_fails_with_the_harness_diagnosis_and_no_points():
    result = run_check(DOUBLE, lambda x: x + 1)
    assert (result.status, result.points) == ("fail", 0)
    assert result.diagnosis == "double(2) returned 3, not 4"  # case one passes: 1 + 1 == 2


def test_failures_that_differ_are_counted():
    result = run_check(DOUBLE, lambda x: x)
    assert result.diagnosis == "double(1) returned 1, not 2 (2 of 2 cases fail)"


@pytest.mark.parametrize("answer", [..., not_written, body_is_ellipsis])
def test_unfinished_work_says_not_yet_never_a_traceback(answer):
    result = run_check(DOUBLE, answer)
    assert (result.status, result.points) == ("not yet", 0)
    assert result.diagnosis.startswith("not yet:")


def test_an_exception_in_the_learners_code_is_a_fail_that_names_it():
    result = run_check(DOUBLE, divides)
    assert result.status == "fail"
    expected = r"your code raised ZeroDivisionError: division by zero \(in divides, line \d+\)"
    assert re.fullmatch(expected, result.diagnosis)


def test_a_broken_harness_is_an_error_not_the_learners_fault():
    register("98.broken", title="broken", public=[Case("only")])(lambda answer, case, ctx: {}["missing"])
    result = run_check(get_check("98.broken"), 42)
    assert result.status == "error"
    assert "fleetlab bug" in result.diagnosis


def test_a_harness_returning_the_wrong_type_is_an_error():
    register("98.sloppy", title="sloppy", public=[Case("only")])(lambda answer, case, ctx: True)
    assert run_check(get_check("98.sloppy"), 42).status == "error"


def test_an_infinite_loop_times_out_stops_its_thread_and_skips_the_rest():
    started = time.monotonic()
    result = run_check(DOUBLE, spins, include_hidden=True)
    assert time.monotonic() - started < 1.5
    assert result.status == "fail"
    assert result.diagnosis.startswith("timed out after 1 s")
    assert [case.status for case in result.cases] == ["fail", "skipped", "skipped"]
    leftover = [t for t in threading.enumerate() if t.name == "fleetlab-check-case"]
    for thread in leftover:
        thread.join(timeout=2)  # the runner asked it to stop; it must honour that promptly
    assert not any(thread.is_alive() for thread in leftover)


def test_the_context_gives_a_seed_a_prefix_and_a_deadline_without_opening_a_backend(monkeypatch):
    import fleetlab.lab

    monkeypatch.setattr(fleetlab.lab, "active_backend", lambda: pytest.fail("a pure check opened a backend"))
    seen = []

    def inspect(answer, case, ctx):
        seen.append((ctx.seed, ctx.fresh_prefix(), ctx.remaining(), ctx.rng().random()))
        return CaseOutcome(True)

    register("98.context", title="context", public=[Case("a")], timeout=3)(inspect)
    run_check(get_check("98.context"), 1)
    run_check(get_check("98.context"), 1)
    (seed, prefix, remaining, draw), (seed_again, prefix_again, _, draw_again) = seen
    assert (seed, draw) == (seed_again, draw_again)
    assert re.fullmatch(r"fl-98-[0-9a-f]{6}-", prefix) and prefix != prefix_again
    assert 0 < remaining <= 3


def test_the_backend_is_the_active_one_resolved_on_first_use(monkeypatch):
    import fleetlab.lab

    opened = []
    monkeypatch.setattr(fleetlab.lab, "active_backend", lambda: opened.append("backend") or "the backend")

    def uses_backend(answer, case, ctx):
        return CaseOutcome(ctx.backend == "the backend" and ctx.backend == "the backend")

    register("98.backend", title="backend", public=[Case("a")])(uses_backend)
    assert run_check(get_check("98.backend"), 1).passed
    assert opened == ["backend"]

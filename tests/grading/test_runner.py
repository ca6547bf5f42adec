import re
import threading
import time
from dataclasses import dataclass

import pytest

from fleetlab.grading import Case, CaseOutcome, Status, get_check, register, registry, run_check

from .answers import body_is_ellipsis, divides, not_written, spins


@dataclass(frozen=True)
class Number(Case):
    value: int


def doubles(answer, case, ctx):
    got = answer(case.value)
    return CaseOutcome(got == 2 * case.value, f"double({case.value}) returned {got!r}, not {2 * case.value}")


with registry.isolated():  # the checks of this module, kept as objects, never left in the registry
    register(
        "98.double",
        title="Double a number",
        points=3,
        public=[Number("one", 1), Number("two", 2)],
        hidden=[Number("minus three", -3)],
        timeout=1.0,
    )(doubles)
    DOUBLE = get_check("98.double")
    register(
        "98.whole",
        title="Double a number, all or nothing",
        points=3,
        public=[Number("one", 1), Number("two", 2)],
        hidden=[Number("minus three", -3)],
        all_or_nothing="doubling is one skill",
    )(doubles)
    WHOLE = get_check("98.whole")


def test_a_right_answer_passes_every_case_with_full_points_when_graded():
    result = run_check(DOUBLE, lambda x: 2 * x, include_hidden=True)
    assert (result.status, result.points, result.max_points, result.passed) == (Status.PASS, 3, 3, True)
    assert [(case.name, case.hidden) for case in result.cases] == [
        ("one", False),
        ("two", False),
        ("minus three", True),
    ]
    assert result.grader_adds == 0


def test_the_notebook_runs_only_public_cases_and_never_scores():
    result = run_check(DOUBLE, lambda x: 2 * x if x > 0 else 0)
    assert (result.status, result.points, result.grader_adds, result.passed) == (Status.PUBLIC_PASS, None, 1, True)
    assert all(not case.hidden for case in result.cases)
    assert result.diagnosis == "all 2 public cases pass; no points until the grader has run every case"
    assert result.scoring == "3 points, 1 for each of 3 cases (2 here, 1 more at grading)"


def test_a_check_without_hidden_cases_is_scored_in_the_notebook():
    with registry.isolated():
        register("98.open", title="open", points=2, public=[Number("one", 1)])(doubles)
        result = run_check(get_check("98.open"), lambda x: 2 * x)
    assert (result.status, result.points) == (Status.PASS, 2)


def test_graded_points_split_per_case_unless_all_or_nothing():
    only_positive = lambda x: 2 * x if x > 0 else 0  # noqa: E731 - passes the public cases only
    split = run_check(DOUBLE, only_positive, include_hidden=True)
    assert (split.status, split.points) == (Status.FAIL, 2)
    whole = run_check(WHOLE, only_positive, include_hidden=True)
    assert (whole.status, whole.points) == (Status.FAIL, 0)
    assert whole.scoring == "3 points for all 3 cases together (2 here, 1 more at grading): doubling is one skill"


def test_a_wrong_answer_fails_with_the_harness_diagnosis_and_no_score_in_the_notebook():
    result = run_check(DOUBLE, lambda x: x + 1)
    assert (result.status, result.points) == (Status.FAIL, None)
    assert result.diagnosis == "double(2) returned 3, not 4"  # case one passes: 1 + 1 == 2


def test_failures_that_differ_are_counted():
    result = run_check(DOUBLE, lambda x: x)
    assert result.diagnosis == "double(1) returned 1, not 2 (2 of 2 cases fail)"


@pytest.mark.parametrize("answer", [..., not_written, body_is_ellipsis])
def test_unfinished_work_says_not_yet_never_a_traceback(answer):
    result = run_check(DOUBLE, answer)
    assert (result.status, result.points) == (Status.NOT_YET, None)
    assert result.diagnosis.startswith("not yet:")
    assert run_check(DOUBLE, answer, include_hidden=True).points == 0


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


def test_a_check_that_asks_for_a_function_refuses_anything_else_before_any_case():
    with registry.isolated():
        register("98.fn", title="fn", public=[Number("one", 1)], hidden=[Number("two", 2)], function="double")(doubles)
        in_notebook = run_check(get_check("98.fn"), 2)
        graded = run_check(get_check("98.fn"), 2, include_hidden=True)
    assert (in_notebook.status, in_notebook.diagnosis, in_notebook.cases) == (
        Status.FAIL, "pass the function itself: check('98.fn', double)", []
    )
    assert (graded.status, graded.points) == (Status.FAIL, 0)

import re
import threading
from dataclasses import dataclass

import pytest

from fleetlab import lab
from fleetlab.grading import Case, CaseOutcome, get_check, register, run_check
from fleetlab.grading import runner

from .answers import body_is_ellipsis, divides, not_written, spins


@dataclass(frozen=True)
class Number(Case):
    value: int


def doubles(answer, case, ctx):
    got = answer(case.value)
    return CaseOutcome(got == 2 * case.value, f"double({case.value}) returned {got!r}, not {2 * case.value}")


@pytest.fixture(autouse=True)
def double():
    """98.double, registered for the test only (conftest forgets it afterwards)."""
    register(
        "98.double",
        title="Double a number",
        points=2,
        public=[Number("one", 1), Number("two", 2)],
        hidden=[Number("minus three", -3)],
        timeout=1.0,
    )(doubles)


@pytest.fixture
def no_backend_opens(monkeypatch):
    monkeypatch.setattr(runner, "open_backend", lambda: pytest.fail("a pure check opened a backend"))


def case_threads():
    return [t for t in threading.enumerate() if t.name in ("fleetlab-check-case",) or t.name.startswith("actor-")]


def test_a_right_answer_passes_with_full_points():
    result = run_check(get_check("98.double"), lambda x: 2 * x, include_hidden=True)
    assert (result.status, result.points, result.max_points, result.passed) == ("pass", 2, 2, True)
    assert [(case.name, case.hidden) for case in result.cases] == [
        ("one", False),
        ("two", False),
        ("minus three", True),
    ]


def test_the_notebook_runs_only_public_cases_and_says_grading_adds_more():
    result = run_check(get_check("98.double"), lambda x: 2 * x if x > 0 else 0)
    assert result.passed
    assert all(not case.hidden for case in result.cases)
    assert result.diagnosis == "all 2 cases pass; grading adds hidden cases"


def test_a_wrong_answer_fails_with_the_harness_diagnosis_and_no_points():
    result = run_check(get_check("98.double"), lambda x: x + 1)
    assert (result.status, result.points) == ("fail", 0)
    assert result.diagnosis == "double(2) returned 3, not 4"  # case one passes: 1 + 1 == 2


def test_failures_that_differ_are_counted():
    result = run_check(get_check("98.double"), lambda x: x)
    assert result.diagnosis == "double(1) returned 1, not 2 (2 of 2 cases fail)"


@pytest.mark.parametrize("answer", [..., not_written, body_is_ellipsis])
def test_unfinished_work_says_not_yet_never_a_traceback(answer):
    result = run_check(get_check("98.double"), answer)
    assert (result.status, result.points) == ("not yet", 0)
    assert result.diagnosis.startswith("not yet:")


def test_an_exception_in_the_learners_code_is_a_fail_that_names_it():
    result = run_check(get_check("98.double"), divides)
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


def test_an_infinite_loop_times_out_stops_its_thread_and_skips_the_rest(no_backend_opens):
    result = run_check(get_check("98.double"), spins, include_hidden=True)
    assert result.status == "fail"
    assert result.diagnosis.startswith("timed out after 1 s")
    assert [case.status for case in result.cases] == ["fail", "skipped", "skipped"]
    assert case_threads() == []  # the runner stopped the case's thread before returning


def race_against(answer, case, ctx):
    """A harness that races the learner's step against a worker on the backend's clock."""
    clock = ctx.backend.clock
    winner = clock.run_together(answer, lambda: clock.sleep(600) or "worker")
    return CaseOutcome(winner[1] == "worker")


def test_a_spinning_actor_stops_with_its_timed_out_case_and_the_next_race_runs():
    register("98.race", title="race", public=[Case("spin")], timeout=1.0)(race_against)
    result = run_check(get_check("98.race"), lambda: spins(None))
    assert (result.status, result.diagnosis[:22]) == ("fail", "timed out after 1 s: y")
    assert case_threads() == []  # no case thread and no actor left spinning
    assert run_check(get_check("98.race"), lambda: "done").passed  # no "cannot be nested"


def test_the_context_gives_a_seed_a_prefix_and_a_deadline_without_opening_a_backend(no_backend_opens):
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


def test_without_a_lab_a_check_opens_its_own_backend_once_and_closes_it():
    backends = []

    def uses_backend(answer, case, ctx):
        backends.append(ctx.backend)
        return CaseOutcome(ctx.backend is backends[0])

    register("98.backend", title="backend", public=[Case("a"), Case("b")])(uses_backend)
    assert run_check(get_check("98.backend"), 1).passed
    assert len({id(b) for b in backends}) == 1 and backends[0].closed


def test_with_a_running_lab_a_check_uses_its_backend_and_leaves_it_open(no_backend_opens):
    running = lab.start("98", quiet=True)
    try:
        used = []
        register("98.lab", title="lab", public=[Case("a")])(
            lambda answer, case, ctx: used.append(ctx.backend) or CaseOutcome(True)
        )
        assert run_check(get_check("98.lab"), 1).passed
        assert used == [running.backend] and not running.backend.closed
    finally:
        running.close()

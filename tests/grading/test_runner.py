import re
import threading
import time
from dataclasses import dataclass

import pytest

from fleetlab.backends.backend import Backend
from fleetlab.core import runqueue
from fleetlab.core.clock import VirtualClock, wait_until
from fleetlab.core.timescale import ScaledClock
from fleetlab.course import lab
from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import Case, CaseOutcome, CheckStatus, get_check, register, registry, run_check, runner
from fleetlab.course.grading.registry import Diagnosis

from .answers import body_is_ellipsis, divides, not_written, polls_forever, spins, waits_forever


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
        hidden_cases=1,
        timeout=1.0,
    )(doubles)
    DOUBLE = get_check("98.double").with_hidden([Number("minus three", -3)])
    register(
        "98.whole",
        title="Double a number, all or nothing",
        points=3,
        public=[Number("one", 1), Number("two", 2)],
        hidden_cases=1,
        all_or_nothing="doubling is one skill",
    )(doubles)
    WHOLE = get_check("98.whole").with_hidden([Number("minus three", -3)])


@pytest.fixture(autouse=True)
def an_idle_machine(request, monkeypatch):
    """No thread ever waits for a CPU: what a timeout says does not hang on how busy this machine is.

    A test that measures the machine (``@pytest.mark.busy_machine``) keeps Linux's real counts.
    """
    if "busy_machine" not in request.keywords:
        monkeypatch.setattr(runqueue, "runqueue_seconds", lambda native_id: None)


@pytest.fixture
def no_backend_opens(monkeypatch):
    monkeypatch.setattr(runner, "open_backend", lambda: pytest.fail("a pure check opened a backend"))


def case_threads():
    return [t for t in threading.enumerate() if t.name in ("fleetlab-check-case",) or t.name.startswith("actor-")]


def test_a_right_answer_passes_every_case_with_full_points_when_graded():
    result = run_check(DOUBLE, lambda x: 2 * x, include_hidden=True)
    assert (result.status, result.points, result.max_points, result.passed) == (CheckStatus.PASS, 3, 3, True)
    assert [(case.name, case.hidden) for case in result.cases] == [
        ("one", False),
        ("two", False),
        ("minus three", True),
    ]
    assert result.grader_adds == 0


def test_the_notebook_runs_only_public_cases_and_never_scores():
    result = run_check(DOUBLE, lambda x: 2 * x if x > 0 else 0)
    assert (result.status, result.points, result.grader_adds, result.passed) == (CheckStatus.PUBLIC_PASS, None, 1, True)
    assert all(not case.hidden for case in result.cases)
    assert result.diagnosis == "all 2 public cases pass; no points until the grader has run every case"
    assert result.scoring == "3 points, 1 for each of 3 cases (2 here, 1 more at grading)"


def test_a_check_without_hidden_cases_is_scored_in_the_notebook():
    with registry.isolated():
        register("98.open", title="open", points=2, public=[Number("one", 1)])(doubles)
        result = run_check(get_check("98.open"), lambda x: 2 * x)
    assert (result.status, result.points) == (CheckStatus.PASS, 2)


def test_graded_points_split_per_case_unless_all_or_nothing():
    only_positive = lambda x: 2 * x if x > 0 else 0  # noqa: E731 - passes the public cases only
    split = run_check(DOUBLE, only_positive, include_hidden=True)
    assert (split.status, split.points) == (CheckStatus.FAIL, 2)
    whole = run_check(WHOLE, only_positive, include_hidden=True)
    assert (whole.status, whole.points) == (CheckStatus.FAIL, 0)
    assert whole.scoring == "3 points for all 3 cases together (2 here, 1 more at grading): doubling is one skill"


def test_a_wrong_answer_fails_with_the_harness_diagnosis_and_no_score_in_the_notebook():
    result = run_check(DOUBLE, lambda x: x + 1)
    assert (result.status, result.points) == (CheckStatus.FAIL, None)
    assert result.diagnosis == "double(2) returned 3, not 4"  # case one passes: 1 + 1 == 2


def test_a_failed_case_carries_the_mistake_key_its_harness_named_and_a_passed_one_none():
    def named(answer, case, ctx):
        if answer(case.value) == 2 * case.value:
            return CaseOutcome(True)
        return CaseOutcome(False, Diagnosis("added one, not doubled", "adds-one") if case.value > 0 else "no idea")

    with registry.isolated():
        register("98.named", title="named", public=[Number("one", 1), Number("two", 2), Number("zero", 0)])(named)
        result = run_check(get_check("98.named"), lambda x: x + 1)
    assert [(case.status, case.mistake, case.diagnosis) for case in result.cases] == [
        (CheckStatus.PASS, "", ""), (CheckStatus.FAIL, "adds-one", "added one, not doubled"),
        (CheckStatus.FAIL, "", "no idea")]
    assert type(result.cases[1].diagnosis) is str  # plain words once in the verdict


@pytest.mark.parametrize(("ok", "mistake"), [(True, "adds-one"), (False, "Adds One"), (False, "adds_one")])
def test_a_mistake_key_is_a_slug_of_a_failed_case_or_refused_naming_the_field(ok, mistake):
    with pytest.raises(InvalidInput, match="^mistake: "):
        CaseOutcome(ok, "words", mistake)


def test_failures_that_differ_are_counted():
    result = run_check(DOUBLE, lambda x: x)
    assert result.diagnosis == "double(1) returned 1, not 2 (2 of 2 cases fail)"


@pytest.mark.parametrize("answer", [..., not_written, body_is_ellipsis])
def test_unfinished_work_says_not_yet_never_a_traceback(answer):
    result = run_check(DOUBLE, answer)
    assert (result.status, result.points) == (CheckStatus.NOT_YET, None)
    assert result.diagnosis.startswith("not yet:")
    assert run_check(DOUBLE, answer, include_hidden=True).points == 0


def test_once_a_case_says_not_yet_the_rest_are_not_run_and_the_verdict_is_the_same():
    ran = []

    def counted(answer, case, ctx):
        ran.append(case.name)
        return doubles(answer, case, ctx)

    register("98.counted", title="counted", public=[Number("one", 1), Number("two", 2)], hidden_cases=1)(counted)
    result = run_check(get_check("98.counted").with_hidden([Number("minus three", -3)]), not_written,
                       include_hidden=True)
    assert (result.status, result.points, ran) == (CheckStatus.NOT_YET, 0, ["one"])
    assert [(case.status, case.diagnosis) for case in result.cases[1:]] == [
        ("skipped", "not run: an earlier case found the exercise unfinished")] * 2


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


def test_an_answers_exception_is_the_learners_whatever_file_its_code_claims():
    namespace = {}
    exec(compile("def doubled(x):\n    return x / 0\n", runner.__file__, "exec"), namespace)
    result = run_check(DOUBLE, namespace["doubled"])
    assert result.status == "fail"
    assert result.diagnosis == "your code raised ZeroDivisionError: division by zero (in doubled, line 2)"


def test_a_harness_that_breaks_after_the_answer_returned_is_still_a_fleetlab_bug():
    def breaks_after(answer, case, ctx):
        answer(case.value)
        return {}["missing"]

    register("98.after", title="after", public=[Number("one", 1)])(breaks_after)
    result = run_check(get_check("98.after"), lambda x: 2 * x)
    assert result.status == "error" and "fleetlab bug" in result.diagnosis


def test_an_answer_with_other_parameters_fails_naming_the_ones_the_exercise_asks_for(no_backend_opens):
    register("98.named", title="named", public=[Number("one", 1)], function="double", parameters="value")(doubles)

    def double(value, factor):
        return value * factor

    result = run_check(get_check("98.named"), double)
    assert (result.status, result.cases) == ("fail", [])
    assert result.diagnosis.startswith("your double takes (value, factor), but the exercise asks for double(value)")


def test_a_huge_exception_text_is_cut_before_it_reaches_the_verdict():
    def shouts(x):
        raise ValueError("x" * 30_000_000)

    result = run_check(DOUBLE, shouts)
    assert result.status == "fail" and len(result.diagnosis) < 3_000
    assert all(len(case.diagnosis) < 3_000 and "characters cut]" in case.diagnosis for case in result.cases)


def test_a_harness_returning_the_wrong_type_is_an_error():
    register("98.sloppy", title="sloppy", public=[Case("only")])(lambda answer, case, ctx: True)
    assert run_check(get_check("98.sloppy"), 42).status == "error"


def test_an_infinite_loop_times_out_stops_its_thread_and_skips_the_rest(no_backend_opens):
    result = run_check(DOUBLE, spins, include_hidden=True)
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
    used = []
    register("98.lab", title="lab", public=[Case("a")])(
        lambda answer, case, ctx: used.append(ctx.backend) or CaseOutcome(True)
    )
    running = lab.start("98", quiet=True)  # lab 98 is known once it has a check
    try:
        assert run_check(get_check("98.lab"), 1).passed
        assert used == [running.backend] and not running.backend.closed
    finally:
        running.close()


def test_a_check_that_asks_for_a_function_refuses_anything_else_before_any_case():
    with registry.isolated():
        register("98.fn", title="fn", public=[Number("one", 1)], hidden_cases=1, function="double")(doubles)
        in_notebook = run_check(get_check("98.fn"), 2)
        graded = run_check(get_check("98.fn").with_hidden([Number("two", 2)]), 2, include_hidden=True)
    assert (in_notebook.status, in_notebook.diagnosis, in_notebook.cases) == (
        CheckStatus.FAIL, "pass the function itself: check('98.fn', double)", []
    )
    assert (graded.status, graded.points) == (CheckStatus.FAIL, 0)


# --------------------------------------------------------------------------- time on a real clock


@pytest.fixture
def scaled_backend(monkeypatch):
    """The backend a check opens: a scaled clock (x60) and no service, so only the clock waits."""

    def refuse(service, config):
        raise AssertionError(f"these checks make no {service} calls")

    backend = Backend(name="localstack", region="us-east-1", clock=ScaledClock(60), make_client=refuse)
    monkeypatch.setattr(runner, "open_backend", lambda: backend)
    yield backend
    backend.close()


def waits_then_answers(answer, case, ctx):
    ctx.backend.clock.sleep(90)  # a 90 s visibility timeout: 1.5 real seconds at x60
    return CaseOutcome(answer() == 1, "answered")


def test_on_a_real_clock_the_backends_waits_do_not_count_against_the_time_limit(scaled_backend):
    register("98.waits", title="waits", public=[Case("one"), Case("two")], timeout=0.5)(waits_then_answers)
    result = run_check(get_check("98.waits"), lambda: 1)
    assert result.passed and [case.status for case in result.cases] == ["pass", "pass"]
    assert sum(case.seconds for case in result.cases) > 2.5  # three real seconds of waiting, within 0.5 s of work


def test_on_a_real_clock_a_loop_times_out_even_while_another_actor_waits(scaled_backend):
    register("98.realrace", title="race", public=[Case("spin")], timeout=1.0)(race_against)
    result = run_check(get_check("98.realrace"), lambda: spins(None))
    assert result.diagnosis.startswith("timed out after 1 s")
    assert "your code was still running" in result.diagnosis
    wait_until(lambda: case_threads() == [], timeout=10, what="the stopped threads to be gone")  # real threads end late


def test_when_the_waits_run_out_the_diagnosis_blames_the_backend_not_the_learner(scaled_backend, monkeypatch):
    monkeypatch.setattr(runner, "WAIT_CAP", 0.5)
    register("98.slow", title="slow", public=[Case("a"), Case("b")], timeout=5)(
        lambda answer, case, ctx: CaseOutcome(ctx.backend.clock.sleep(600) is None)
    )
    result = run_check(get_check("98.slow"), 1)
    assert result.cases[0].diagnosis.startswith(
        "not judged: the case spent 0.5 s waiting on the clock and localstack without finishing"
    )
    assert "the backend was too slow here, not your code" in result.cases[0].diagnosis
    assert result.cases[0].status == "error"  # not judged: never counted against the learner
    assert "your code was still running" not in result.diagnosis
    assert result.cases[1].status == "skipped"


@pytest.mark.parametrize("endless", [waits_forever, polls_forever], ids=["sleep", "wait_until"])
def test_a_learners_own_endless_wait_on_the_clock_is_named_as_theirs(scaled_backend, monkeypatch, endless):
    monkeypatch.setattr(runner, "WAIT_CAP", 0.5)
    register("98.forever", title="forever", public=[Case("a")], timeout=5)(
        lambda answer, case, ctx: CaseOutcome(answer(ctx.backend.clock))
    )
    result = run_check(get_check("98.forever"), endless)
    assert re.fullmatch(rf"timed out: your code was still waiting after 0.5 s \(in {endless.__name__}, line \d+\); "
                        r"look for a wait without a bound", result.diagnosis)
    wait_until(lambda: case_threads() == [], timeout=10, what="the stopped threads to be gone")


# --------------------------------------------------------------------------- cases side by side


def meets_the_other_case(started):
    """A harness whose case passes only when the other case runs at the same time."""

    def harness(answer, case, ctx):
        ctx.backend  # a side-by-side check asks for the backend: its clock decides
        started[case.name].set()
        other = started["b" if case.name == "a" else "a"]
        met = other.wait(2)
        return CaseOutcome(met and answer() == 1, "met the other case" if met else "ran alone")

    return harness


def side_by_side_check(check_id, started):
    register(check_id, title="side by side", public=[Case("a")], hidden_cases=1, timeout=5,
             side_by_side=True)(meets_the_other_case(started))
    return get_check(check_id).with_hidden([Case("b")])


def test_on_a_real_clock_a_side_by_side_checks_cases_run_at_once(scaled_backend):
    started = {"a": threading.Event(), "b": threading.Event()}
    result = run_check(side_by_side_check("98.together", started), lambda: 1, include_hidden=True)
    assert [(case.name, case.status, case.diagnosis) for case in result.cases] == [
        ("a", "pass", "met the other case"), ("b", "pass", "met the other case")]


def test_on_a_virtual_clock_a_side_by_side_checks_cases_still_run_in_turn(monkeypatch):
    def refuse(service, config):
        raise AssertionError(f"these checks make no {service} calls")

    backend = Backend(name="moto", region="us-east-1", clock=VirtualClock(), make_client=refuse)
    monkeypatch.setattr(runner, "open_backend", lambda: backend)
    started = {"a": threading.Event(), "b": threading.Event()}
    try:
        result = run_check(side_by_side_check("98.inturn", started), lambda: 1, include_hidden=True)
    finally:
        backend.clock.close()  # the clock was made here, not by open_backend: the backend does not own it
    assert [(case.name, case.diagnosis) for case in result.cases] == [("a", "ran alone"), ("b", "met the other case")]


def test_side_by_side_cases_share_the_checks_time_limit(scaled_backend):
    register("98.togetherloop", title="loops", public=[Case("a"), Case("b")], timeout=0.5, side_by_side=True)(
        lambda answer, case, ctx: CaseOutcome(ctx.backend is not None and answer(None) is None))
    result = run_check(get_check("98.togetherloop"), spins)
    assert [case.status for case in result.cases] == ["fail", "fail"]
    assert all(case.diagnosis.startswith("timed out after 0.5 s") for case in result.cases)
    wait_until(lambda: case_threads() == [], timeout=10, what="the stopped threads to be gone")


def starved_of(share: float, monkeypatch) -> None:
    """Every watched thread waits for a CPU ``share`` of the time from now on (a synthetic busy machine)."""
    started = time.monotonic()
    monkeypatch.setattr(runqueue, "runqueue_seconds", lambda native_id: share * (time.monotonic() - started))


def test_time_a_busy_machine_kept_from_the_code_is_not_the_codes(monkeypatch):
    register("98.work", title="work", public=[Case("half a second")], timeout=1.0)(
        lambda answer, case, ctx: CaseOutcome(answer() == "done"))
    starved_of(0.75, monkeypatch)  # 1.4 s of wall time is 0.35 s of the code's

    def works_for_a_while():
        end = time.monotonic() + 1.4
        while time.monotonic() < end:
            pass
        return "done"

    result = run_check(get_check("98.work"), works_for_a_while)
    assert result.status == CheckStatus.PASS, result.diagnosis


def test_a_loop_on_a_machine_too_busy_to_judge_it_is_not_judged_twice_and_never_failed(monkeypatch):
    register("98.spin", title="spin", public=[Case("spin")], timeout=0.2)(lambda answer, case, ctx: answer())
    starved_of(0.95, monkeypatch)  # the code gets a twentieth of the time: 0.1 s of 2 s (10 x 0.2 s)
    result = run_check(get_check("98.spin"), lambda: spins(None))
    assert result.status == CheckStatus.ERROR
    assert result.cases[0].diagnosis.startswith("not judged: this machine was too busy: in 2 s it gave your code")
    assert case_threads() == []


def test_a_loop_still_fails_once_the_code_had_its_time_however_busy_the_machine(monkeypatch):
    register("98.spin", title="spin", public=[Case("spin")], timeout=0.2)(lambda answer, case, ctx: answer())
    starved_of(0.5, monkeypatch)  # half the time: 0.2 s of the code's in 0.4 s, well inside 2 s
    result = run_check(get_check("98.spin"), lambda: spins(None))
    assert result.status == CheckStatus.FAIL
    assert result.diagnosis.startswith("timed out after 0.2 s") and "your code was still running" in result.diagnosis


@pytest.mark.busy_machine
def test_a_right_answer_passes_on_a_machine_that_five_busy_processes_load():
    # Real load: five processes spin on this machine's (two) cores while a case does 0.4 s of work in a 0.8 s
    # limit. The case gets at most a third of a core, so its 0.4 s take 1.2 s or more of wall time.
    import subprocess
    import sys

    register("98.cpu", title="cpu", public=[Case("0.4 s of work")], timeout=0.8)(
        lambda answer, case, ctx: CaseOutcome(answer() > 0))

    def work():
        spent, count = time.thread_time(), 0
        while time.thread_time() - spent < 0.4:
            count += 1
        return count

    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(5)]
    try:
        result = run_check(get_check("98.cpu"), work)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert result.status == CheckStatus.PASS, result.diagnosis


def test_a_watched_process_counts_each_threads_wait_from_the_watch_and_a_new_threads_whole_wait(monkeypatch):
    waits = iter([{1: 1.0, 2: 2.0}, {1: 1.5, 3: 0.25}, {1: 1.5, 3: 0.25}])
    monkeypatch.setattr(runqueue, "process_runqueue", lambda pid: next(waits))
    meter = runqueue.RunQueueMeter()
    meter.watch_process(4242)
    assert meter.seconds() == 0.75  # thread 1 waited 0.5 s since, thread 3 was born after: all its 0.25 s
    meter.unwatch_process(4242)
    assert meter.seconds() == 0.75  # kept, and the process no longer read

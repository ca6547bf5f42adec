"""Check ``01.heartbeat``: the learner writes ``keep_hidden(sqs, queue_url,
receipt_handle, visibility_timeout, clock)``, returning a context manager
that keeps the message hidden while its block runs, and stops when the block
ends, also when the step raises. The harness records every
ChangeMessageVisibility call and judges them exactly: every instant of the
step must be covered, and a beat that lands as the window closes (within
``BOUNDARY`` seconds, or the clock's tolerance where time is real) is a race,
not cover. A second worker polls the queue meanwhile (it goes first at equal
instants) and must get the message back within two visibility timeouts of
the step's end; the worker lives on after the step until then, so a
heartbeat that never stops shows itself (its next beat comes before the
message can be back). A ``clock.every`` timer dropped while it still ran
(stopped by the garbage collector, not by the learner) fails the case too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from fleetlab.composition.topology import experiment_queue
from fleetlab.core.errors import StepFailed
from fleetlab.course.experiments.delivery import send_alerts
from fleetlab.course.grading.calls import Call, CallLog
from fleetlab.course.grading.leaks import watching_timers
from fleetlab.course.grading.registry import Case, CaseOutcome, Diagnosis, register
from fleetlab.course.grading.values import duration

BOUNDARY = 1.0  # seconds: a beat this close to the end of the window is a race, not cover
RETURN_WITHIN = 2  # visibility timeouts after the step's end by which the message must be back


@dataclass(frozen=True)
class LongStep(Case):
    """A step of ``step`` seconds inside the heartbeat, on a queue with this timeout; it may fail at the end."""

    visibility_timeout: int = 300
    step: float = 990.0
    fails: bool = False


@dataclass
class _HeartbeatRun:
    """What happened while one long step ran under the learner's heartbeat (times from the first receive)."""

    phase: str = "call"  # call -> enter -> step -> exit -> after
    problem: str = ""
    ended: float | None = None
    swallowed: bool = False
    taken_at: list[tuple[float, str]] = field(default_factory=list)
    polling: bool = True
    worker_failed: bool = False
    boundary: float = BOUNDARY  # the margin a beat needs before its window ends (wider where time is real)
    dropped: list[str] = field(default_factory=list)  # what each timer dropped while still running warned


def _run_step(answer: Any, case: LongStep, ctx: Any) -> tuple[_HeartbeatRun, list[Call], float]:
    """Receive one message, run the step under ``answer``'s heartbeat while a second worker polls."""
    backend, clock = ctx.backend, ctx.backend.clock
    run = _HeartbeatRun(boundary=max(BOUNDARY, clock.tolerance))
    with experiment_queue(backend, ctx.fresh_prefix(), visibility_timeout=case.visibility_timeout) as queue:
        send_alerts(backend, queue, ["alert-1"])
        sqs = backend.client("sqs")
        message = sqs.receive_message(QueueUrl=queue.url)["Messages"][0]
        start = clock.now()
        log = CallLog(sqs, clock, tag=lambda: run.phase)
        vis = queue.visibility_timeout

        def work() -> None:
            try:
                live(answer(log.client, queue.url, message["ReceiptHandle"], vis, clock))
            except BaseException:  # the learner's code raised: the verdict is known, the poller may stop
                run.worker_failed = True
                raise

        def live(manager: Any) -> None:
            if not (hasattr(manager, "__enter__") and hasattr(manager, "__exit__")):
                run.problem = (
                    f"keep_hidden returned {type(manager).__name__}; return a context manager "
                    "(for example the one clock.every(...) gives you)"
                )
                return
            run.phase = "enter"
            try:
                with manager:
                    run.phase = "step"
                    clock.sleep(case.step)
                    run.phase, run.ended = "exit", _since(start, clock)
                    if case.fails:
                        raise StepFailed("fleetlab.StepFailed", "the long step failed at its end")
            except StepFailed:
                pass
            else:
                run.swallowed = case.fails
            run.phase = "after"
            live_until = clock.now() + RETURN_WITHIN * vis  # the worker lives on: a heartbeat that outlived its block beats now
            while run.polling and (left := live_until - clock.now()) > 0:
                clock.sleep(min(vis / 10, left))

        def poll() -> None:
            interval = vis / 10
            try:
                while not run.problem and not run.worker_failed:
                    at = _since(start, clock)
                    if sqs.receive_message(QueueUrl=queue.url).get("Messages"):
                        run.taken_at.append((at, run.phase))
                        return
                    if at > case.step + (RETURN_WITHIN + 1) * vis:
                        return
                    clock.sleep(interval)
            finally:
                run.polling = False

        try:
            clock.run_together(poll, work)  # the poller first: at equal instants it goes before the heartbeat
        finally:
            log.close()
    calls = [_relative(call, start) for call in log.of("change_message_visibility", "change_message_visibility_batch")]
    return run, calls, float(vis)


def _since(start: float, clock: Any) -> float:
    """Seconds since ``start``, to a tenth: the virtual clock ticks with wall time, microseconds apart."""
    return round(clock.now() - start, 1)


def _relative(call: Call, start: float) -> Call:
    return dataclasses.replace(call, at=round(call.at - start, 1))


def _extensions(call: Call) -> list[float]:
    """The visibility timeouts a successful call set (one per batch entry)."""
    if not call.ok:
        return []
    if call.operation == "change_message_visibility":
        return [float(call.params["VisibilityTimeout"])]
    return [float(entry["VisibilityTimeout"]) for entry in call.params.get("Entries", [])]


def _first_gap(calls: list[Call], end: float, vis: float, boundary: float) -> tuple[float, float] | None:
    """The first stretch of the step (from, until) not covered with a margin of ``boundary``, or None."""
    hidden_until = vis
    for call in calls:
        for extension in _extensions(call):
            if call.at > hidden_until - boundary:
                return hidden_until, call.at
            hidden_until = call.at + extension
    if end > hidden_until - boundary:
        return hidden_until, end
    return None


def _hidden_until(calls: list[Call], vis: float) -> float:
    hidden_until = vis
    for call in calls:
        for extension in _extensions(call):
            hidden_until = call.at + extension
    return hidden_until


def _judge_heartbeat(run: _HeartbeatRun, calls: list[Call], case: LongStep, vis: float) -> CaseOutcome:
    if run.problem:
        return CaseOutcome(False, run.problem, "not-a-context-manager")
    end = run.ended if run.ended is not None else case.step
    step = f"the {duration(case.step)} step"
    if run.swallowed:
        return CaseOutcome(
            False,
            f"{step} raised, but your context manager swallowed the exception: the worker would take the step "
            "for done and delete the message; let the exception through (__exit__ returns nothing)",
            "swallows-the-step-exception",
        )
    late = [call for call in calls if call.tag == "after"]
    if late:
        when = "failed" if case.fails else "ended"
        advice = "; stop it in a finally (a with block or try/finally), so it stops when the step raises too" if case.fails else ""
        return CaseOutcome(
            False,
            f"your heartbeat extended the message at +{late[0].at:g} s, {duration(late[0].at - end)} after "
            f"{step} {when} (+{end:g} s): it never stopped, so a crashed worker's message would stay hidden{advice}",
            "heartbeat-outlives-a-failed-step" if case.fails else "heartbeat-never-stops",
        )
    if run.dropped:
        return CaseOutcome(
            False,
            "your heartbeat's timer was dropped while still running: nothing called its __exit__ or stop(), so it "
            f"stopped only when Python garbage-collected it (ResourceWarning: {run.dropped[0]}). Collection can "
            "come late, or never while a reference cycle holds the timer, and the message stays hidden meanwhile; "
            "stop the timer yourself: enter it in a with block, or call its stop() (or __exit__) in your __exit__",
            "timer-left-to-the-garbage-collector",
        )
    during = [call for call in calls if call.tag != "exit"]
    gap = _first_gap(during, end, vis, run.boundary)
    if gap is not None:
        return CaseOutcome(False, _gap_diagnosis(gap, during, step, end, vis, run))
    taken = [at for at, phase in run.taken_at if phase != "after"]
    if taken:
        return CaseOutcome(False, f"worker-2 received the message at +{taken[0]:g} s, while {step} was still running",
                           "taken-while-the-step-runs")
    back = _hidden_until(calls, vis)
    if back > end + RETURN_WITHIN * vis + run.boundary:
        return CaseOutcome(
            False,
            f"the message stays hidden until +{back:g} s, {duration(back - end)} after {step} ended: "
            f"a crashed worker's message would wait that long (allow at most {RETURN_WITHIN} visibility timeouts, "
            f"{duration(RETURN_WITHIN * vis)}); extend by about one visibility timeout at a time",
            "hidden-long-after-the-step",
        )
    if not run.taken_at:
        return CaseOutcome(False, f"the message did not come back within {duration(RETURN_WITHIN * vis)} of the step's end",
                           "message-not-back-after-the-step")
    return CaseOutcome(True, f"hidden for the whole step, back {duration(max(run.taken_at[0][0] - end, 0))} after it ended")


def _gap_diagnosis(
    gap: tuple[float, float], during: list[Call], step: str, end: float, vis: float, run: _HeartbeatRun
) -> Diagnosis:
    """Why the message was visible during the step, with the mistake's key: never extended, a beat that ties
    the window's end, no beat after the last window closed, or beats further apart than an extension lasts."""
    opened, closed = gap
    taken = [at for at, phase in run.taken_at if phase != "after"]
    seen = f"; here worker-2 received it at +{taken[0]:g} s" if taken else ""
    if not [call for call in during if _extensions(call)]:
        return Diagnosis(
            f"keep_hidden never extended the message while {step} ran (no ChangeMessageVisibility reached SQS): "
            f"it became visible at +{opened:g} s and another worker can run it twice{seen}",
            "never-extends",
        )
    if abs(closed - opened) < run.boundary:
        return Diagnosis(
            f"at +{opened:g} s the message's visibility ran out at the very instant your heartbeat extended it: "
            f"on AWS that is a race another worker's receive can win; beat before each window ends: every "
            f"extension must last longer than the time to the next beat{seen}",
            "beat-ties-the-window-end",
        )
    no_beat_after = closed >= end
    until = "the step ended" if no_beat_after else f"the next beat at +{closed:g} s"
    return Diagnosis(
        f"the message was visible from +{opened:g} s until {until}, while {step} was still running "
        f"(visibility timeout {vis:g} s): another worker can take it and run the step twice; "
        f"beat more often than the timeout, and extend by more than the interval{seen}",
        "stops-extending-before-the-step-ends" if no_beat_after else "beats-further-apart-than-an-extension-lasts",
    )


@register(
    "01.heartbeat",
    title="Keep a long step's message hidden with a heartbeat",
    function="keep_hidden",
    parameters="sqs, queue_url, receipt_handle, visibility_timeout, clock",
    points=2,
    public=[
        LongStep("a 16½-minute step on a 5-minute timeout", 300, 990),
        LongStep("a step that fails after 12 minutes, on a 5-minute timeout", 300, 720, fails=True),
    ],
    hidden_cases=2,
    timeout=20,
)
def check_heartbeat(answer: Any, case: LongStep, ctx: Any) -> CaseOutcome:
    """Run one long step under the learner's heartbeat and judge every extension it made."""
    (run, calls, vis), dropped = watching_timers(lambda: _run_step(answer, case, ctx))
    run.dropped = dropped
    return _judge_heartbeat(run, calls, case, vis)

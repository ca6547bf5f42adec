"""Run one check's cases against an answer, each under the check's time budget.

Each case runs in a daemon thread; the runner stops waiting at the deadline,
so a learner's infinite loop becomes "fail: timed out". It then stops the
case: CheckAbandoned is raised inside the case thread at its next Python
instruction, and the backend's clock cancels any ``run_together`` actors the
case started (a learner's CPU-bound loop inside a race included), so the
next case or check finds no thread and no group left behind. Cases after a
timeout are skipped. On a real clock the cases of a ``side_by_side`` check
all start at once, so their waits on the backend overlap.

A check's ``timeout`` is measured on the code, not on the backend's waits
(``Budget``): on a real clock the time during which all of a case's threads
wait on the clock or on the backend is not counted, up to ``WAIT_CAP`` real
seconds per check. When those waits run out, the diagnosis says the backend
was too slow, unless the learner's own code was the one waiting. Nor is the
time a case's thread, or the process running the answer, waited for a CPU on
a busy machine (``runqueue``); a check whose cases ran ``BUSY_FACTOR`` times
their ``timeout`` without using it up was starved by the machine: it runs
once more, and if the machine is still too busy the case is "not judged" (an
error, never the learner's fail).

A check's backend is opened only when a case asks for it: the running lab's
backend when a lab runs in this kernel, else one opened for the check and
closed when it ends (``CheckBackend``).
"""

from __future__ import annotations

import random
import threading
import time
import traceback
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from fleetlab.backends.backend import Backend, open_backend
from fleetlab.core import clock, timescale
from fleetlab.core.clock import CANCEL_GRACE, WAIT_SLICE, raise_in_thread
from fleetlab.core.runqueue import RunQueueMeter
from fleetlab.core.waits import WaitMeter
from fleetlab.course.grading import learner, shortcuts
from fleetlab.course.grading.elsewhere import ENDED, AnswerProcessLost, process_of
from fleetlab.course.grading.registry import Case, CaseOutcome, Check
from fleetlab.course.grading.results import (
    CaseResult,
    CheckResult,
    CheckStatus,
    capped,
    conclude,
    not_yet,
    refused,
)

ABANDON_SLICE = 0.5
"""Real seconds a timed-out case gets to unwind on its own before the runner cancels what it left on the clock."""

WAIT_CAP = 90.0
"""Real seconds a check's cases may spend all waiting on a real clock or the backend, beyond its ``timeout``."""

BUSY_FACTOR = 10.0
"""A check's cases get at most this many times its ``timeout`` of real time (waits aside), however little
of it a busy machine let them run."""
TOO_BUSY = "not judged: this machine was too busy"

NOT_RUN_UNFINISHED = "not run: an earlier case found the exercise unfinished"
SLOW_BACKEND_HELP = "docs/troubleshooting.md#a-check-times-out-waiting-on-the-backend"
WAIT_FILES = (*clock.CLOCK_FILES, timescale.__file__)
"""Where a wait on the clock happens: a learner's frame calling into these is the learner's own wait."""


class CheckAbandoned(BaseException):
    """Raised inside a case thread that ran past its deadline, to stop it."""


class CheckBackend:
    """The backend checks run on, opened on first use only (pure-logic checks never open one).

    The running lab's backend when a lab runs in this kernel (left open
    afterwards); otherwise one opened here and closed by ``close()``. A
    context manager: the block's end closes what it opened.
    """

    def __init__(self) -> None:
        self._backend: Backend | None = None
        self._opened_here = False
        self._guard = threading.Lock()
        self._meter: WaitMeter | None = None

    def __enter__(self) -> CheckBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def in_use(self) -> bool:
        return self._backend is not None

    def get(self) -> Backend:
        """The backend, opening it on first use (see the class docstring)."""
        from fleetlab.course.lab import running_backend

        with self._guard:
            if self._backend is None or self._backend.closed:
                running = running_backend()
                self._backend = running or open_backend()
                self._opened_here = running is None
            self._backend.clock.meter = self._meter
            return self._backend

    def real_clock(self) -> bool:
        """True when the backend's clock is real (LocalStack, AWS); opens the backend."""
        return not self.get().clock.virtual

    @property
    def name(self) -> str:
        """The backend's name, once opened ("the backend" before)."""
        return self._backend.name if self._backend is not None else "the backend"

    def meter(self, meter: WaitMeter | None) -> None:
        """Count the waits of the backend's clock and clients on ``meter`` from now on (None: stop)."""
        with self._guard:
            self._meter = meter
            if self._backend is not None and not self._backend.closed:
                self._backend.clock.meter = meter

    def cancel_actors(self) -> None:
        """Cancel the actors a case left running on the backend's clock (nothing if never opened)."""
        if self._backend is not None and not self._backend.closed:
            self._backend.clock.cancel()

    def close(self) -> None:
        """Close the backend if it was opened here; the running lab's stays open."""
        self.meter(None)
        with self._guard:
            if self._backend is not None and self._opened_here:
                self._backend.close()
            self._backend = None
            self._opened_here = False


@dataclass
class Budget:
    """A check's time: ``timeout`` real seconds of its own work, and up to ``cap`` more of pure waiting.

    ``meter`` counts the real time during which every thread of the running
    case waited on the clock or the backend; only a real clock marks waits,
    so on the virtual clock the budget is exactly ``timeout``. ``starved``
    counts the time the cases' threads waited for a CPU (a busy machine's,
    not the learner's): it is not the check's own time either, up to
    ``BUSY_FACTOR`` times ``timeout`` of real time.
    """

    timeout: float
    cap: float = WAIT_CAP
    meter: WaitMeter = field(default_factory=WaitMeter)
    starved: RunQueueMeter = field(default_factory=RunQueueMeter)
    started: float = field(default_factory=time.monotonic)

    def waited(self) -> float:
        """Real seconds spent all waiting so far."""
        return self.meter.idle()

    def own(self) -> float:
        """Real seconds the check's code had so far: waiting on the clock, the backend or a CPU not counted."""
        return max(0.0, time.monotonic() - self.started - self.waited() - self.starved.seconds())

    def remaining(self) -> float:
        """Real seconds of work left: 0 once the check's own time, its waits or its starving have run out."""
        if self.waits_ran_out() or self.machine_too_busy():
            return 0.0
        return max(0.0, self.timeout - self.own())

    def waits_ran_out(self) -> bool:
        return self.waited() >= self.cap

    def machine_too_busy(self) -> bool:
        """True once ``BUSY_FACTOR`` times ``timeout`` of real time passed, waits aside. A check whose code had
        its ``timeout`` by then timed out before; one that had not was held up by the machine."""
        return time.monotonic() - self.started - self.waited() >= BUSY_FACTOR * self.timeout


@dataclass
class CheckContext:
    """What a harness gets besides the answer and the case.

    ``seed`` is fixed per check and case, so faults are reproducible.
    ``backend`` is the check's backend, opened on first access only
    (pure-logic checks never touch it). ``budget`` is the check's time:
    bound any wait by ``remaining()``.
    """

    check_id: str
    seed: int
    budget: Budget
    _backends: CheckBackend = field(default_factory=CheckBackend, repr=False)

    @property
    def backend(self) -> Any:
        return self._backends.get()

    def rng(self) -> random.Random:
        """A random generator seeded for this check and case."""
        return random.Random(self.seed)

    def fresh_prefix(self) -> str:
        """A fresh resource-name prefix such as ``fl-01-3fa9c2-``."""
        from fleetlab.composition.topology import new_prefix

        return new_prefix(self.check_id.split(".", 1)[0])

    def remaining(self) -> float:
        """Real seconds of work left before the check gives up (waits on a real clock not counted)."""
        return self.budget.remaining()


def run_check(
    check: Check, answer: Any, *, include_hidden: bool = False, backends: CheckBackend | None = None,
    reload: Callable[[], Any] | None = None,
) -> CheckResult:
    """Run ``answer`` through the public (and, for the grader, hidden) cases of ``check``.

    Only a run with the hidden cases is scored; a notebook's run says what
    its public cases showed and how many cases the grader adds. ``backends``
    is shared by several checks (the grader's session); without it the check
    opens its own on first use and closes it before returning. An answer
    that calls a library function implementing the exercise scores nothing
    (``shortcuts``; one running in another process is watched there).
    ``reload`` gives the answer afresh when it runs in another process: a
    check run once more on a busy machine gets a new one, since a case cut
    at its deadline stopped the last.
    """
    if learner.is_unfinished(answer):
        return not_yet(check, graded=include_hidden)
    if check.function and not callable(answer):
        advice = f"pass the function itself: check({check.id!r}, {check.function})"
        return refused(check, advice, graded=include_hidden)
    if misfit := learner.misfit(answer, check.function, check.parameters):
        return refused(check, misfit, graded=include_hidden)
    if backends is None:
        with CheckBackend() as own:
            return run_check(check, answer, include_hidden=include_hidden, backends=own)
    watch = shortcuts.Watch(shortcuts.implementing(check))
    watched = watch.wrap(answer)
    results = _run_cases(check, watched, include_hidden, backends)
    if any(result.diagnosis.startswith(TOO_BUSY) for result in results):  # once more: the machine, not the code
        if reload is not None and process_of(answer) is not None:
            watched = watch.wrap(reload())
        results = _run_cases(check, watched, include_hidden, backends)
    if watch.hits:
        return shortcuts.refused_shortcut(check, watch.hits, graded=include_hidden)
    return conclude(check, results, graded=include_hidden)


def _run_cases(check: Check, answer: Any, include_hidden: bool, backends: CheckBackend) -> list[CaseResult]:
    """Every case of ``check`` under one fresh budget, side by side where it may."""
    budget = Budget(check.timeout, WAIT_CAP)
    backends.meter(budget.meter)
    runs = [(case, hidden, CheckContext(check.id, _seed(check.id, case), budget, backends))
            for case, hidden in check.cases(include_hidden=include_hidden)]
    codes = frozenset() if process_of(answer) is not None else learner.answer_codes(answer)
    try:
        if check.side_by_side and backends.real_clock():
            return _run_side_by_side(check, answer, codes, runs)
        return _run_in_turn(check, answer, codes, runs)
    finally:
        backends.meter(None)


_Run = tuple[Case, bool, "CheckContext"]


def _run_in_turn(check: Check, answer: Any, codes: frozenset[CodeType], runs: list[_Run]) -> list[CaseResult]:
    """One case after another; once the budget has run out, or a case says "not yet" (then the check's verdict
    whatever the others would say), the rest are skipped."""
    results: list[CaseResult] = []
    for case, hidden, context in runs:
        if any(result.status == CheckStatus.NOT_YET for result in results):
            results.append(CaseResult(case.name, CheckStatus.SKIPPED, NOT_RUN_UNFINISHED, hidden))
        elif context.budget.remaining() <= 0:
            results.append(CaseResult(case.name, CheckStatus.SKIPPED, "not run: the check ran out of time", hidden))
        else:
            results.append(_run_case(check, answer, codes, case, context, hidden))
    return results


def _run_side_by_side(check: Check, answer: Any, codes: frozenset[CodeType], runs: list[_Run]) -> list[CaseResult]:
    """Every case at once, each under the shared budget; the results in case order."""
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="fleetlab-cases") as pool:
        started = [pool.submit(_run_case, check, answer, codes, case, context, hidden)
                   for case, hidden, context in runs]
        return [result.result() for result in started]


def _run_case(check: Check, answer: Any, codes: frozenset[CodeType], case: Case, context: CheckContext,
              hidden: bool) -> CaseResult:
    started = time.monotonic()
    ran = _call_with_deadline(
        check.harness, (answer, case, context), context.budget, stop_actors=context._backends.cancel_actors
    )
    outcome, error = ran.value, ran.error
    seconds = time.monotonic() - started
    if not ran.finished:
        status, diagnosis = _timed_out(check, context, ran.stuck)
        return CaseResult(case.name, status, diagnosis, hidden, seconds)
    if error is not None:
        status, diagnosis = _classify(error, check, codes)
        return CaseResult(case.name, status, diagnosis, hidden, seconds)
    if not isinstance(outcome, CaseOutcome):
        diagnosis = f"the harness returned {type(outcome).__name__}, not a CaseOutcome (a fleetlab bug)"
        return CaseResult(case.name, CheckStatus.ERROR, diagnosis, hidden, seconds)
    status = CheckStatus.PASS if outcome.ok else CheckStatus.FAIL
    return CaseResult(case.name, status, outcome.diagnosis, hidden, seconds, outcome.mistake)


def _timed_out(check: Check, context: CheckContext, stuck: traceback.FrameSummary | None) -> tuple[CheckStatus, str]:
    """Why a case ran out of time: the learner's code (a fail), or on a real clock the backend's waits
    (an error: the check could not judge, never the learner's fault)."""
    budget, backend = context.budget, context._backends.name
    if budget.machine_too_busy() and budget.own() < check.timeout:
        return CheckStatus.ERROR, (f"{TOO_BUSY}: in {BUSY_FACTOR * check.timeout:g} s it gave your code "
                                   f"{budget.own():.1f} s of the {check.timeout:g} s the check allows; "
                                   "not your code's fault: run the check again when the machine is quieter")
    if not budget.waits_ran_out():
        waited, starved = budget.waited(), budget.starved.seconds()
        not_counted = [f"{waited:.0f} s of waiting on the clock and {backend}"] if waited >= 1 else []
        not_counted += [f"{starved:.0f} s of waiting for a CPU on a busy machine"] if starved >= 1 else []
        aside = f" (not counting {' or '.join(not_counted)})" if not_counted else ""
        return CheckStatus.FAIL, (f"timed out after {check.timeout:g} s{aside}: your code was still running; "
                                  "look for a loop that never ends or a wait without a bound")
    if stuck is not None:
        return CheckStatus.FAIL, (f"timed out: your code was still waiting after {budget.cap:g} s "
                                  f"(in {stuck.name}, line {stuck.lineno}); look for a wait without a bound")
    return CheckStatus.ERROR, (f"not judged: the case spent {budget.cap:g} s waiting on the clock and {backend} "
                               "without finishing, the most a check may wait there; the backend was too slow here, "
                               f"not your code: run the check again ({SLOW_BACKEND_HELP})")


@dataclass(frozen=True)
class _Ran:
    """How a case's thread ended: its value or error, or not finished (and the learner's frame it was in)."""

    value: Any = None
    error: BaseException | None = None
    finished: bool = True
    stuck: traceback.FrameSummary | None = None


def _call_with_deadline(fn: Any, args: tuple, budget: Budget, *, stop_actors: Any) -> _Ran:
    """Run ``fn(*args)`` in a daemon thread until it ends or ``budget`` runs out.

    The case thread takes part in the budget's wait meter. When the budget
    runs out, the case thread is stopped (CheckAbandoned inside it) and given
    ``ABANDON_SLICE`` to unwind; then ``stop_actors()`` cancels any actors it
    left on the clock, and the runner waits a bounded grace more.
    """
    box: dict[str, Any] = {}
    meter = budget.meter
    answer_process = process_of(args[0]) if args else None  # where the answer runs, when not in this process

    def target() -> None:
        meter.join()
        budget.starved.watch()
        if answer_process is not None:
            budget.starved.watch_process(answer_process)
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # the learner's code may raise anything, even SystemExit
            box["error"] = exc
        finally:
            if answer_process is not None:
                budget.starved.unwatch_process(answer_process)
            budget.starved.unwatch()
            meter.leave()

    thread = threading.Thread(target=target, name="fleetlab-check-case", daemon=True)
    thread.start()
    while thread.is_alive() and (left := budget.remaining()) > 0:
        thread.join(min(WAIT_SLICE, left))
    if not thread.is_alive():
        return _Ran(box.get("value"), box.get("error"))
    harness = getattr(getattr(fn, "__code__", None), "co_filename", "")
    stuck = learner.learner_waiting(meter.threads, WAIT_FILES, (harness,))
    raise_in_thread(thread, CheckAbandoned)
    thread.join(ABANDON_SLICE)
    stop_actors()  # whatever the case left on the clock, even if the stop landed while its race was ending
    thread.join(CANCEL_GRACE)
    return _Ran(finished=False, stuck=stuck)


def _classify(error: BaseException, check: Check, codes: frozenset[CodeType]) -> tuple[CheckStatus, str]:
    """Whose ``error`` is: the learner's when it passed through the answer's code (``codes``, its own
    whatever file that code names) or the answer's process; else the check's own, a fleetlab bug."""
    if isinstance(error, AnswerProcessLost):  # the process running the learner's code ended, or broke the protocol
        return CheckStatus.FAIL, ENDED.format(why=error)
    harness_file = (check.harness.__code__.co_filename,)
    if learner.raised_by_learner_stub(error, codes, harness_file):
        return CheckStatus.NOT_YET, ""
    frames = learner.learner_frames(error, codes, harness_file)
    if frames:
        return CheckStatus.FAIL, learner.describe_learner_error(error, frames)
    return CheckStatus.ERROR, (f"the check itself failed ({type(error).__name__}: {capped(str(error), 500)}); "
                               "a fleetlab bug, please report it")


def _seed(check_id: str, case: Case) -> int:
    return zlib.crc32(f"{check_id}/{case.name}".encode())

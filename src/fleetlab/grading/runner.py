"""Run one check's cases against an answer, each under the check's time budget.

Each case runs in a daemon thread; the runner stops waiting at the deadline,
so a learner's infinite loop becomes "fail: timed out". It then stops the
case: CheckAbandoned is raised inside the case thread at its next Python
instruction, and the backend's clock cancels any ``run_together`` actors the
case started (a learner's CPU-bound loop inside a race included), so the
next case or check finds no thread and no group left behind. Cases after a
timeout are skipped.

A check's backend is opened only when a case asks for it: the running lab's
backend when a lab runs in this kernel, else one opened for the check and
closed when it ends (``CheckBackend``).
"""

from __future__ import annotations

import random
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from ..aws.backends import Backend, open_backend
from ..clock import CANCEL_GRACE, raise_in_thread
from . import learner
from .registry import Case, CaseOutcome, Check
from .results import CaseResult, CheckResult, Status, conclude, not_yet, refused

ABANDON_SLICE = 0.5
"""Real seconds a timed-out case gets to unwind on its own before the runner cancels what it left on the clock."""


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

    def __enter__(self) -> CheckBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def in_use(self) -> bool:
        return self._backend is not None

    def get(self) -> Backend:
        """The backend, opening it on first use (see the class docstring)."""
        from ..lab import running_backend

        with self._guard:
            if self._backend is None or self._backend.closed:
                running = running_backend()
                self._backend = running or open_backend()
                self._opened_here = running is None
            return self._backend

    def cancel_actors(self) -> None:
        """Cancel the actors a case left running on the backend's clock (nothing if never opened)."""
        if self._backend is not None and not self._backend.closed:
            self._backend.clock.cancel()

    def close(self) -> None:
        """Close the backend if it was opened here; the running lab's stays open."""
        with self._guard:
            if self._backend is not None and self._opened_here:
                self._backend.close()
            self._backend = None
            self._opened_here = False


@dataclass
class CheckContext:
    """What a harness gets besides the answer and the case.

    ``seed`` is fixed per check and case, so faults are reproducible.
    ``backend`` is the check's backend, opened on first access only
    (pure-logic checks never touch it). ``deadline`` is a ``time.monotonic()``
    instant: bound any wait by ``remaining()``.
    """

    check_id: str
    seed: int
    deadline: float
    _backends: CheckBackend = field(default_factory=CheckBackend, repr=False)

    @property
    def backend(self) -> Any:
        return self._backends.get()

    def rng(self) -> random.Random:
        """A random generator seeded for this check and case."""
        return random.Random(self.seed)

    def fresh_prefix(self) -> str:
        """A fresh resource-name prefix such as ``fl-01-3fa9c2-``."""
        from ..aws.topology import new_prefix

        return new_prefix(self.check_id.split(".", 1)[0])

    def remaining(self) -> float:
        """Seconds left before the check gives up."""
        return max(0.0, self.deadline - time.monotonic())


def run_check(
    check: Check, answer: Any, *, include_hidden: bool = False, backends: CheckBackend | None = None
) -> CheckResult:
    """Run ``answer`` through the public (and, for the grader, hidden) cases of ``check``.

    Only a run with the hidden cases is scored; a notebook's run says what
    its public cases showed and how many cases the grader adds. ``backends``
    is shared by several checks (the grader's session); without it the check
    opens its own on first use and closes it before returning.
    """
    if learner.is_unfinished(answer):
        return not_yet(check, graded=include_hidden)
    if check.function and not callable(answer):
        advice = f"pass the function itself: check({check.id!r}, {check.function})"
        return refused(check, advice, graded=include_hidden)
    if backends is None:
        with CheckBackend() as own:
            return run_check(check, answer, include_hidden=include_hidden, backends=own)
    deadline = time.monotonic() + check.timeout
    results: list[CaseResult] = []
    for case, hidden in check.cases(include_hidden=include_hidden):
        if time.monotonic() >= deadline:
            results.append(CaseResult(case.name, Status.SKIPPED, "not run: the check ran out of time", hidden))
            continue
        context = CheckContext(check.id, _seed(check.id, case), deadline, backends)
        results.append(_run_case(check, answer, case, context, hidden))
    return conclude(check, results, graded=include_hidden)


def _run_case(check: Check, answer: Any, case: Case, context: CheckContext, hidden: bool) -> CaseResult:
    started = time.monotonic()
    outcome, error, finished = _call_with_deadline(
        check.harness, (answer, case, context), context.remaining(), stop_actors=context._backends.cancel_actors
    )
    seconds = time.monotonic() - started
    if not finished:
        diagnosis = (
            f"timed out after {check.timeout:g} s: your code was still running; "
            "look for a loop that never ends or a wait without a bound"
        )
        return CaseResult(case.name, Status.FAIL, diagnosis, hidden, seconds)
    if error is not None:
        status, diagnosis = _classify(error, check)
        return CaseResult(case.name, status, diagnosis, hidden, seconds)
    if not isinstance(outcome, CaseOutcome):
        diagnosis = f"the harness returned {type(outcome).__name__}, not a CaseOutcome (a fleetlab bug)"
        return CaseResult(case.name, Status.ERROR, diagnosis, hidden, seconds)
    return CaseResult(case.name, Status.PASS if outcome.ok else Status.FAIL, outcome.diagnosis, hidden, seconds)


def _call_with_deadline(
    fn: Any, args: tuple, seconds: float, *, stop_actors: Any
) -> tuple[Any, BaseException | None, bool]:
    """Run ``fn(*args)`` in a daemon thread for at most ``seconds``: (value, error, finished).

    At the deadline the case thread is stopped (CheckAbandoned inside it)
    and given ``ABANDON_SLICE`` to unwind; then ``stop_actors()`` cancels
    any actors it left on the clock, and the runner waits a bounded grace more.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # the learner's code may raise anything, even SystemExit
            box["error"] = exc

    thread = threading.Thread(target=target, name="fleetlab-check-case", daemon=True)
    thread.start()
    thread.join(seconds)
    if not thread.is_alive():
        return box.get("value"), box.get("error"), True
    raise_in_thread(thread, CheckAbandoned)
    thread.join(ABANDON_SLICE)
    stop_actors()  # whatever the case left on the clock, even if the stop landed while its race was ending
    thread.join(CANCEL_GRACE)
    return None, None, False


def _classify(error: BaseException, check: Check) -> tuple[Status, str]:
    harness_file = (check.harness.__code__.co_filename,)
    if learner.raised_by_learner_stub(error, harness_file):
        return Status.NOT_YET, ""
    frames = learner.learner_frames(error, harness_file)
    if frames:
        return Status.FAIL, learner.describe_learner_error(error, frames)
    return Status.ERROR, f"the check itself failed ({type(error).__name__}: {error}); a fleetlab bug, please report it"


def _seed(check_id: str, case: Case) -> int:
    return zlib.crc32(f"{check_id}/{case.name}".encode())

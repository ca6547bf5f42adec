"""Run one check's cases against an answer, each under the check's time budget.

Each case runs in a daemon thread; the runner stops waiting at the deadline,
so a learner's infinite loop becomes "fail: timed out", and asks the thread
to stop (an exception raised inside it at its next Python instruction) so
the kernel stays responsive. Cases after a timeout are skipped.
"""

from __future__ import annotations

import ctypes
import random
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from . import learner
from .registry import Case, CaseOutcome, Check
from .results import CaseResult, CheckResult, Status, conclude, not_yet, refused


class CheckAbandoned(BaseException):
    """Raised inside a case thread that ran past its deadline, to stop it."""


@dataclass
class CheckContext:
    """What a harness gets besides the answer and the case.

    ``seed`` is fixed per check and case, so faults are reproducible.
    ``backend`` is the active fleetlab backend, opened on first access only
    (pure-logic checks never touch it). ``deadline`` is a ``time.monotonic()``
    instant: bound any wait by ``remaining()``.
    """

    check_id: str
    seed: int
    deadline: float
    _backend: Any = field(default=None, repr=False)

    @property
    def backend(self) -> Any:
        if self._backend is None:
            from ..lab import active_backend

            self._backend = active_backend()
        return self._backend

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


def run_check(check: Check, answer: Any, *, include_hidden: bool = False) -> CheckResult:
    """Run ``answer`` through the public (and, for the grader, hidden) cases of ``check``.

    Only a run with the hidden cases is scored; a notebook's run says what
    its public cases showed and how many cases the grader adds.
    """
    if learner.is_unfinished(answer):
        return not_yet(check, graded=include_hidden)
    if check.function and not callable(answer):
        advice = f"pass the function itself: check({check.id!r}, {check.function})"
        return refused(check, advice, graded=include_hidden)
    deadline = time.monotonic() + check.timeout
    results: list[CaseResult] = []
    for case, hidden in check.cases(include_hidden=include_hidden):
        if time.monotonic() >= deadline:
            results.append(CaseResult(case.name, Status.SKIPPED, "not run: the check ran out of time", hidden))
            continue
        context = CheckContext(check.id, _seed(check.id, case), deadline)
        results.append(_run_case(check, answer, case, context, hidden))
    return conclude(check, results, graded=include_hidden)


def _run_case(check: Check, answer: Any, case: Case, context: CheckContext, hidden: bool) -> CaseResult:
    started = time.monotonic()
    outcome, error, finished = _call_with_deadline(check.harness, (answer, case, context), context.remaining())
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


def _call_with_deadline(fn: Any, args: tuple, seconds: float) -> tuple[Any, BaseException | None, bool]:
    """Run ``fn(*args)`` in a daemon thread for at most ``seconds``: (value, error, finished)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # the learner's code may raise anything, even SystemExit
            box["error"] = exc

    thread = threading.Thread(target=target, name="fleetlab-check-case", daemon=True)
    thread.start()
    try:
        thread.join(seconds)
    finally:
        finished = not thread.is_alive()
        if not finished:
            _stop(thread)
    if not finished:
        return None, None, False
    return box.get("value"), box.get("error"), True


def _stop(thread: threading.Thread) -> None:
    """Ask ``thread`` to raise CheckAbandoned at its next Python instruction (CPython)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(CheckAbandoned))


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

"""One exception hierarchy for fleetlab.

Every error says what to do next, and whether the operation it reports
*definitely did not happen* (safe to retry as is) or *may have happened*
(retry only through an idempotent path). That one bit decides between a plain
retry and an idempotent replay, so it is part of every error's contract.
"""

from __future__ import annotations

from collections.abc import Sequence


class FleetlabError(Exception):
    """Base of every error fleetlab raises on purpose.

    ``may_have_happened`` is False when the failed operation left no trace
    (retry freely) and True when it may have taken effect before failing
    (retry only idempotently).
    """

    may_have_happened: bool = False

    def __init__(self, message: str, *, may_have_happened: bool | None = None) -> None:
        super().__init__(message)
        if may_have_happened is not None:
            self.may_have_happened = may_have_happened


class ConfigError(FleetlabError):
    """A setting, flag or environment variable is wrong; nothing was done."""


class RealAwsRefused(ConfigError):
    """The ``aws`` backend was chosen without the explicit opt-in."""


class BackendUnavailable(FleetlabError):
    """The chosen backend could not be reached or started; nothing was done."""


class LabClosed(FleetlabError):
    """A call through a client of a closed lab (its backend closed): nothing was sent anywhere."""

    def __init__(self, what: str) -> None:
        super().__init__(f"this lab is closed; run the set-up cell again ({what})")


class NotRunYet(FleetlabError, IndexError):
    """A lab's object asked for an item the cells above it make, before they ran: an IndexError that says so."""


class InvalidInput(FleetlabError):
    """Input failed validation. ``field`` names the offending field."""

    def __init__(self, field: str, problem: str, *, hint: str = "") -> None:
        self.field = field
        self.problem = problem
        self.hint = hint
        message = f"{field}: {problem}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)


class ManifestError(InvalidInput):
    """A manifest breaks one rule or several; nothing was read from it.

    ``problems`` holds every broken rule, each an InvalidInput naming its
    field path. With one problem the error reads as that problem (same
    ``field``, same message); with several, ``field`` lists their paths and
    the message lists the problems, one a line, under what ``origin`` names.
    """

    def __init__(self, problems: Sequence[InvalidInput], *, origin: str = "the manifest") -> None:
        self.problems = tuple(problems)
        if len(self.problems) == 1:
            only = self.problems[0]
            super().__init__(only.field, only.problem, hint=only.hint)
            return
        self.field = ", ".join(problem.field for problem in self.problems)
        self.problem = "\n".join(str(problem) for problem in self.problems)
        self.hint = ""
        listed = "".join(f"\n  {problem}" for problem in self.problems)
        FleetlabError.__init__(self, f"{origin} has {len(self.problems)} problems:{listed}")


class EnvelopeError(InvalidInput):
    """An event envelope is malformed; it was not published."""


class AslError(InvalidInput):
    """A state-machine definition is malformed; it was not created."""


class HiddenCasesMissing(ConfigError):
    """A check's hidden cases were asked for where they are not: they belong to the instructor's side."""

    def __init__(self, check_id: str) -> None:
        self.check_id = check_id
        super().__init__(
            f"the hidden cases of {check_id} are the grader's: they come with the instructor's package "
            "(fleetlab_instructor.checks), which a learner's install does not hold; in a notebook, check() runs "
            "the public cases"
        )


class Timeout(FleetlabError):
    """A wait gave up before what it waited for happened.

    The operation may still complete after the wait ended (an execution still
    RUNNING, a move task still moving, actors still running), so it may
    have happened: look again before retrying, or retry idempotently.
    """

    may_have_happened = True


class ResponseTimeout(Timeout):
    """A caller stopped waiting for the answer to ``request_id`` after ``timeout`` seconds.

    The request may still be answered later (it may be queued, running, or
    on its last attempt): poll it by id rather than sending it again.
    """

    def __init__(self, request_id: str, timeout: float) -> None:
        self.request_id = request_id
        self.timeout = timeout
        super().__init__(
            f"no answer to {request_id} within {timeout:g} s: the caller stopped waiting; "
            "the request may still be answered, so poll it by its id rather than send it again"
        )


class PartlyRefused(FleetlabError):
    """A batch call was refused for some entries; the others went through.

    ``refused`` lists what the service said about each refused entry. The
    accepted entries happened, so retry only the refused ones, or all of
    them through an idempotent consumer.
    """

    may_have_happened = True

    def __init__(self, message: str, *, refused: list[str]) -> None:
        super().__init__(message)
        self.refused = refused


class RedriveFailed(FleetlabError):
    """A DLQ redrive stopped part way (its move task was cancelled); some messages may have moved."""

    may_have_happened = True


class MeasurementFailed(FleetlabError):
    """A measurement's own run went wrong (a benchmark, a fidelity probe, a call count), so its figure would mean
    nothing; what measures records this instead of a figure."""


class ProvisionError(FleetlabError):
    """Provisioning failed part way; what was made so far has been torn down."""

    may_have_happened = True


class ReplayFailed(FleetlabError):
    """An EventBridge replay ended FAILED or CANCELLED.

    Some of its events may already have been delivered: replay again only to
    targets that deduplicate on the work (trace_id), never on the event id.
    """

    may_have_happened = True

    def __init__(self, name: str, state: str, reason: str = "") -> None:
        self.name = name
        self.state = state
        super().__init__(f"replay {name} ended {state}" + (f": {reason}" if reason else ""))


class IdempotencyError(FleetlabError):
    """Base of the idempotency store's errors."""


class AlreadyInProgress(IdempotencyError):
    """Another worker holds a live lease on this key; the work was not started.

    Leave the message for redelivery: by then the holder has finished or its
    lease has expired and the key can be reclaimed.
    """


class LeaseLost(IdempotencyError):
    """The lease expired before the result was saved; another worker may own the key.

    The effect may have happened: do not run it again here, let the message go
    back to the queue so the new owner (or a replay) finishes idempotently.
    """

    may_have_happened = True


class WorkerCrashed(FleetlabError):
    """An injected fault killed the worker at a named crash point.

    The message was not deleted, so the queue will deliver it again once its
    visibility timeout expires. Whatever ran before the crash point happened.
    ``receive_count`` is None when the worker held no one message (a redrive).
    """

    may_have_happened = True

    def __init__(self, point: str, trace_id: str, receive_count: int | None) -> None:
        self.point = point
        self.trace_id = trace_id
        self.receive_count = receive_count
        receive = "" if receive_count is None else f" (receive {receive_count})"
        super().__init__(f"worker crashed at {point} while handling {trace_id}{receive}")


class ModelError(FleetlabError):
    """The fake agent model failed a call; ``transient`` says whether a retry can help.

    ``deployment`` names the model deployment that failed ("" when the model
    is unnamed, or when no deployment was called). ``rejected_input`` says the
    deployment answered and refused this input (a poison input, HTTP 400): the
    input's fault, not the deployment's, so a router does not bench the
    deployment for it.
    """

    def __init__(self, message: str, *, transient: bool, deployment: str = "", rejected_input: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.deployment = deployment
        self.rejected_input = rejected_input


class GroupAtCapacity(ModelError):
    """A router's model group had its limit of calls in flight: the call was refused, not sent.

    Nothing was called, and a later try can get through (transient); the
    router refuses rather than queue, so an outage elsewhere cannot pile its
    whole load onto this group.
    """

    def __init__(self, group: str, limit: int) -> None:
        super().__init__(
            f"model group {group} has its limit of {limit} calls in flight; the call was refused, not queued",
            transient=True,
        )
        self.group = group
        self.limit = limit


class StepFailed(FleetlabError):
    """A step failed with ``error``, the name a retry policy or a Catch routes on.

    Raised by a callback step to fail its task, by a batch record's processing,
    and by a step whose work failed. The step did not finish; whatever it did
    before raising happened.
    """

    may_have_happened = True

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"the step failed with {error}" + (f": {cause}" if cause else ""))
        self.error = error
        self.cause = cause


class CallbackRefused(FleetlabError):
    """Step Functions refused a callback for a reason other than a dead token; the task did not take it.

    Throttling or a malformed output: the token may still be live, so the
    message is left on the queue for another try.
    """


class QuotaExhausted(FleetlabError):
    """The token governor had no allowance left in this window; the model call was not made.

    Nothing happened, so retry freely once the window rolls over at ``retry_at`` (clock seconds),
    or, better, let the dispatcher hold the work on its queue until then.
    """

    def __init__(self, message: str, *, retry_at: float) -> None:
        super().__init__(message)
        self.retry_at = retry_at

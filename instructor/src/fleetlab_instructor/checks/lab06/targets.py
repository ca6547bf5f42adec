"""``06.targets``: the hidden scenarios, the reference decision and both catalogues.

The hidden scenarios bring new targets (one dedupes on the SQS MessageId)
and a replay almost as old as the idempotent targets' windows, so an answer
that hard-codes the lab's names or ignores the window does not pass.
"""

from __future__ import annotations

import numpy

from fleetlab.composition.topology import DAY
from fleetlab.course.checks.lab06.targets import Scenario
from fleetlab.course.experiments.replay import Target
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Scenario("new targets, events two days old", (
        Target("crm-sync", "updates the CRM", "SQS MessageId", 30 * DAY),
        Target("ledger-writer", "writes the ledger entry", "trace_id", 90 * DAY),
        Target("sms-alerts", "texts the on-call engineer"),
    ), 2 * DAY, must_receive=("ledger-writer",)),
    Scenario("idempotent targets only, a replay of 29-day-old events", (
        Target("archive-copy", "copies the result to cold storage", "trace_id", 30 * DAY),
        Target("analytics-loader", "loads the step into analytics", "trace_id", 35 * DAY),
        Target("warehouse", "inserts a warehouse row", "event id", 365 * DAY),
    ), 29 * DAY, must_receive=("archive-copy", "analytics-loader")),
)


def reference_targets(target: Target, replay_age: float) -> bool:
    """A replay may reach a target that dedupes on the work and remembers it longer than the replay's age."""
    return target.dedupes_on == "trace_id" and target.window_seconds > replay_age


RIGHT_ANSWERS = (
    RightAnswer("a substring test on the key", lambda t, age: "trace" in (t.dedupes_on or "") and t.window_seconds > age),
    RightAnswer("1 and 0 for True and False", lambda t, age: int(reference_targets(t, age))),
    RightAnswer("numpy booleans", lambda t, age: numpy.bool_(reference_targets(t, age))),
    RightAnswer("a window with an hour to spare",
                lambda t, age: t.dedupes_on == "trace_id" and t.window_seconds >= age + 3_600),
)

WRONG_ANSWERS = (
    WrongAnswer("every target", lambda target, age: True, "billing-webhook",
                mistake="replays-reach-a-target-with-no-key"),
    WrongAnswer("any target with a key", lambda target, age: target.dedupes_on is not None, "new id",
                mistake="key-new-for-every-delivery"),
    WrongAnswer("no target at all", lambda target, age: False, "missed",
                mistake="replay-kept-from-a-target-that-needs-it"),
    WrongAnswer("keys on the work, ignores the window", lambda target, age: target.dedupes_on == "trace_id",
                "had expired", mistake="records-expired-before-the-replay"),
    WrongAnswer("the lab's names, hard-coded", lambda target, age: target.name in ("results-store", "ticketing"),
                "missed", public=False, mistake="replay-kept-from-a-target-that-needs-it"),
    WrongAnswer("a dict of names", {"results-store": True, "billing-webhook": False}, "pass the function itself"),
)

# The harness sees one mistake in both: a target that could take the replay safely was kept from it.
SHARED_MISTAKES = {"replay-kept-from-a-target-that-needs-it": "kept the replay from a target that can take it safely"}

SIDE = InstructorSide("06.targets", hidden=HIDDEN, reference=reference_targets,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)

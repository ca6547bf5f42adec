"""Lab 07's pieces that need no backend: the day's series recorder, the sizing arithmetic, and the two figures."""

import matplotlib
import pytest

matplotlib.use("Agg")

from fleetlab.composition.chaos import DaySample, size_fleet  # noqa: E402
from fleetlab.composition.chaos.series import SeriesRecorder, error_class  # noqa: E402
from fleetlab.composition.chaos.sizing import DYNAMODB_TABLE_WRITES, daily_estimate  # noqa: E402
from fleetlab.core.errors import InvalidInput  # noqa: E402
from fleetlab.core.tracing import Hop  # noqa: E402
from fleetlab.display import conversation_waterfall, day_dashboard, quota_table, sizing_explorer  # noqa: E402
from fleetlab.services.sqs.worker import HandleOutcome, Outcome  # noqa: E402

PER_STEP = {"sqs.ReceiveMessage": 0.5, "sqs.DeleteMessage": 1.0, "eventbridge.PutEvents": 0.1,
            "dynamodb.PutItem": 2.0, "dynamodb.UpdateItem": 1.5, "dynamodb.GetItem": 1.0}


def outcome(trace, status, error=""):
    return HandleOutcome(trace_id=trace, message_id="m", receive_count=1, status=status, error=error)


def test_the_recorder_keeps_unfinished_steps_and_counts_errors_by_class():
    recorder = SeriesRecorder(start=1_000.0)
    recorder.published(["a", "b", "c"], at=1_000.0)
    recorder.published(["d"], at=1_060.0)
    first = recorder.sample([outcome("a", Outcome.DONE), outcome("b", Outcome.CRASHED, "before_effect"),
                             outcome("c", Outcome.FAILED, "ModelError: down")], at=1_300.0, replicas=3)
    assert first == DaySample(at=300.0, waiting=3, replicas=3, oldest_age=300.0,
                              errors={"crash before_effect": 1, "ModelError": 1})
    recorder.published(["b"], at=1_400.0)  # a replay of a step still waiting keeps its first time
    second = recorder.sample([outcome("b", Outcome.DONE), outcome("c", Outcome.PARKED, "ModelError: down"),
                              outcome("d", Outcome.BUSY, "held")], at=1_500.0, replicas=1)
    assert (second.waiting, second.oldest_age, second.errors) == (1, 440.0, {"parked": 1, "lease held elsewhere": 1})
    assert recorder.sample([outcome("d", Outcome.DONE)], at=1_600.0, replicas=1).oldest_age == 0
    assert error_class(outcome("x", Outcome.DONE)) is None


def test_sizing_puts_the_most_used_quota_first_with_its_arithmetic():
    sizing = size_fleet(PER_STEP, 1_000, step_seconds=60, queues=2)
    uses = {row.quota: (row.use, row.limit) for row in sizing.quotas}
    assert uses == {"Step Functions SendTaskSuccess": (1_000, 500), "SQS messages in flight, per queue": (30_000, 120_000),
                    "DynamoDB writes, one table": (3_500, DYNAMODB_TABLE_WRITES), "EventBridge PutEvents": (100, 10_000)}
    assert [row.share for row in sizing.quotas] == sorted((row.share for row in sizing.quotas), reverse=True)
    assert sizing.binds_first.quota == "Step Functions SendTaskSuccess" and sizing.binds_first.share == 2.0
    elsewhere = size_fleet(PER_STEP, 1_000, step_seconds=600, queues=2, callbacks_per_step=0.2, region="sa-east-1")
    assert elsewhere.binds_first.quota == "SQS messages in flight, per queue"  # 300,000 of 120,000
    assert {row.quota: row.limit for row in elsewhere.quotas}["EventBridge PutEvents"] == 400
    assert "1,000 steps a second in us-east-1" in str(sizing)


def test_a_day_is_priced_from_the_calls_per_step_times_the_days_steps():
    bill = daily_estimate(PER_STEP, 10)
    lines = {(line.service, line.unit): line.units for line in bill.lines}
    steps = 10 * 86_400
    assert lines[("sqs", "requests")] == 1.5 * steps
    assert lines[("eventbridge", "custom events")] == steps
    assert lines[("dynamodb", "write request units")] == 3.5 * steps
    assert lines[("dynamodb", "read request units")] == steps
    assert bill.total_usd == pytest.approx(steps * (1.5 * 0.40 + 0.40 + 1.00 + 3.5 * 0.625 + 0.125) / 1e6)


@pytest.mark.parametrize(("field", "arguments"), [("steps_per_second", {"steps_per_second": 0}),
                                                  ("step_seconds", {"step_seconds": -1}),
                                                  ("queues", {"queues": 0}),
                                                  ("callbacks_per_step", {"callbacks_per_step": -1}),
                                                  ("region", {"region": "mars-1"})])
def test_a_bad_sizing_argument_names_itself(field, arguments):
    with pytest.raises(InvalidInput) as raised:
        size_fleet(PER_STEP, **({"steps_per_second": 1_000, "step_seconds": 60, "queues": 2} | arguments))
    assert raised.value.field == field


def hops(trace, *named):
    return tuple(Hop(trace, name, at, "worker") for name, at in named)


def test_the_waterfall_has_one_row_per_step_in_step_order():
    traces = {
        "conv-1-step-2": hops("conv-1-step-2", ("published", 0), ("received", 120), ("claimed", 120),
                              ("effect", 150), ("completed", 150), ("deleted", 151)),
        "conv-1-step-1": hops("conv-1-step-1", ("published", 0), ("received", 60), ("crashed", 60),
                              ("received", 960), ("effect", 990), ("deleted", 991)),
        "conv-10-step-1": hops("conv-10-step-1", ("published", 5)),
    }
    figure = conversation_waterfall(traces, "conv-1")
    axes = figure.axes[0]
    assert [label.get_text() for label in axes.get_yticklabels()] == ["step-1", "step-2"]
    assert axes.get_title() and axes.get_xlabel() and axes.get_ylabel()
    # step-1: waiting 0-1 min, held 1-1 min (the crash), waiting 1-16 min, held 16-16.5 min; step-2: two spans
    assert len(axes.patches) == 6
    assert axes.get_xlim()[1] > 991 / 60  # the time axis reaches the conversation's last hop
    with pytest.raises(InvalidInput) as raised:
        conversation_waterfall(traces, "conv-2")
    assert raised.value.field == "conversation"


def test_the_dashboard_has_four_titled_labelled_panels():
    samples = [DaySample(0, 50, 5, 0, {}), DaySample(3_600, 20, 2, 600, {"crash before_effect": 2, "parked": 1}),
               DaySample(7_200, 0, 1, 0, {"ModelError": 3})]
    figure = day_dashboard(samples)
    depth, replicas, age, errors = figure.axes[:4]
    assert figure._suptitle.get_text()
    assert all(axes.get_title() and axes.get_ylabel() for axes in (depth, replicas, age, errors))
    assert age.get_xlabel() and errors.get_xlabel()
    assert list(depth.get_lines()[0].get_ydata()) == [50, 20, 0]
    assert list(age.get_lines()[0].get_ydata()) == [0, 10, 0]
    assert sum(patch.get_height() for patch in errors.patches) == 6
    with pytest.raises(InvalidInput) as raised:
        day_dashboard([])
    assert raised.value.field == "samples"


def test_the_quota_table_flags_what_binds_and_the_explorer_follows_its_slider(capsys):
    table = quota_table(PER_STEP, 1_000, step_seconds=60, queues=2)
    assert [(row["quota"], row["binds?"]) for row in table.rows][:2] == [
        ("Step Functions SendTaskSuccess", "yes"), ("SQS messages in flight, per queue", "")]
    widget = sizing_explorer(PER_STEP, step_seconds=60, queues=2, start=100)  # outside a kernel the output prints
    slider, _ = widget.children
    assert "100 steps a second in us-east-1" in capsys.readouterr().out
    slider.value = 10_000
    assert "10,000 steps a second in us-east-1" in capsys.readouterr().out
    with pytest.raises(InvalidInput) as raised:
        sizing_explorer(PER_STEP, step_seconds=60, queues=2, start=333)
    assert raised.value.field == "start"


def test_a_step_two_workers_held_at_once_shows_both_holds():
    first, standby = "researcher-worker", "researcher-standby"
    traces = {"conv-0-step-3": (Hop("conv-0-step-3", "published", 0, "bus"),
                                Hop("conv-0-step-3", "received", 300, first),
                                Hop("conv-0-step-3", "received", 2_700, standby),
                                Hop("conv-0-step-3", "deleted", 2_760, standby),
                                Hop("conv-0-step-3", "failed", 7_380, first))}
    bars = conversation_waterfall(traces, "conv-0").axes[0].patches
    assert sorted((bar.get_x(), bar.get_x() + bar.get_width()) for bar in bars) == [(0, 5), (5, 123), (45, 46)]

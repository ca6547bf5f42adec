"""Clock, faults, model, ledger, tracing, topology spec and ASL validation: no backend needed."""

import time

import pytest

from fleetlab.composition.topology import AgentClass, TopologySpec, visibility_for
from fleetlab.core.clock import VirtualClock
from fleetlab.core.errors import AslError, ConfigError, InvalidInput, WorkerCrashed
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.core.ledger import EffectsLedger
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.stepfunctions.asl import orchestrator_definition, validate_asl


@pytest.fixture
def clock():
    virtual = VirtualClock(start=1_800_000_000)
    yield virtual
    virtual.close()


def test_virtual_clock_jumps_and_keeps_ticking(clock):
    before = clock.now()
    clock.sleep(900)
    assert 900 <= clock.now() - before < 905
    assert time.time() == pytest.approx(clock.now(), abs=1)


def test_only_one_virtual_clock_at_a_time(clock):
    with pytest.raises(ConfigError, match="already running"):
        VirtualClock()


def test_every_fires_at_each_interval_during_a_sleep(clock):
    beats = []
    start = clock.now()
    with clock.every(300, lambda: beats.append(round(clock.now() - start))):
        clock.sleep(1000)
    clock.sleep(1000)  # outside the block: no more beats
    assert beats == [300, 600, 900]


def test_an_exception_in_every_propagates_out_of_sleep(clock):
    def die():
        raise WorkerCrashed("during_heartbeat", "t-1", 1)

    with pytest.raises(WorkerCrashed), clock.every(10, die):
        clock.sleep(25)


def test_fault_plan_is_deterministic_and_matches_explicit_crashes():
    plan = FaultPlan.chaos(seed=3, rate=0.2)
    draws = [plan.should_crash(CrashPoint.BEFORE_EFFECT, f"t-{i}", 1) for i in range(500)]
    assert draws == [FaultPlan.chaos(seed=3, rate=0.2).should_crash(CrashPoint.BEFORE_EFFECT, f"t-{i}", 1) for i in range(500)]
    assert 60 <= sum(draws) <= 140
    explicit = FaultPlan(crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-7", receive=1),))
    assert explicit.should_crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-7", 1)
    assert not explicit.should_crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-7", 2)
    assert not explicit.should_crash(CrashPoint.BEFORE_EFFECT, "alert-7", 1)
    with pytest.raises(WorkerCrashed) as crash:
        explicit.check(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-7", 1)
    assert crash.value.may_have_happened


def test_fault_rates_are_validated():
    with pytest.raises(InvalidInput, match=r"rates\[before_effect\]"):
        FaultPlan(rates={CrashPoint.BEFORE_EFFECT: 1.5})


def test_model_is_deterministic_per_trace_and_attempt(clock):
    model = FakeModel(seed=5, latency=LatencyProfile(p50=60, p95=300), transient_failure_rate=0.0)
    latencies = [model.latency_of(f"t-{i}") for i in range(2000)]
    assert latencies == [FakeModel(seed=5, latency=LatencyProfile(60, 300)).latency_of(f"t-{i}") for i in range(2000)]
    ordered = sorted(latencies)
    assert ordered[1000] == pytest.approx(60, rel=0.15)
    assert ordered[1900] == pytest.approx(300, rel=0.2)
    start = clock.now()
    result = model.invoke("t-1", 1, clock)
    assert clock.now() - start == pytest.approx(result.latency, abs=1)


def test_ledger_counts_duplicates_and_losses():
    ledger = EffectsLedger()
    for key in ["a", "b", "b", "c", "c", "c"]:
        ledger.record(key, kind="ticket", actor="w", at=0)
    summary = ledger.summary(expected={"a", "b", "c", "d"})
    assert (summary.effects, summary.distinct, summary.duplicated, summary.lost) == (6, 3, 3, 1)
    assert ledger.duplicates() == {"b": 2, "c": 3}
    assert not summary.exactly_once


def test_visibility_is_sized_from_p95_with_a_margin():
    assert visibility_for(600) == 900
    assert AgentClass("researcher", step_p95_seconds=100).visibility_timeout == 150
    with pytest.raises(InvalidInput, match="heartbeat"):
        visibility_for(40_000)


def test_topology_spec_rejects_unbounded_retries():
    with pytest.raises(InvalidInput) as raised:
        TopologySpec(retry_attempts=200)
    assert raised.value.field == "retry_attempts"
    with pytest.raises(InvalidInput, match="unique"):
        TopologySpec(agent_classes=(AgentClass("a"), AgentClass("a")))


def test_orchestrator_definition_is_valid_and_passes_the_token():
    definition = orchestrator_definition(bus_name="bus", timeout_seconds=3600, heartbeat_seconds=900)
    task = definition["States"]["DispatchStep"]
    assert task["Resource"].endswith("events:putEvents.waitForTaskToken")
    assert task["Parameters"]["Entries"][0]["Detail"]["task_token.$"] == "$$.Task.Token"


@pytest.mark.parametrize(
    ("definition", "field"),
    [
        ([], "definition"),
        ({"StartAt": "A", "States": {}}, "States"),
        ({"StartAt": "B", "States": {"A": {"Type": "Succeed"}}}, "StartAt"),
        ({"StartAt": "A", "States": {"A": {"Type": "Wait", "Seconds": 1}}}, "States.A"),
        ({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Z"}}}, "States.A.Next"),
        ({"StartAt": "A", "States": {"A": {"Type": "Tusk", "End": True}}}, "States.A.Type"),
        (
            {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                                              "Parameters": {"MessageBody": {}}, "End": True}}},
            "States.A.Parameters",
        ),
        (
            {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:x", "TimeoutSeconds": 60,
                                              "HeartbeatSeconds": 60, "End": True}}},
            "States.A.HeartbeatSeconds",
        ),
        (
            {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:x", "End": True,
                                              "Catch": [{"ErrorEquals": [], "Next": "A"}]}}},
            "States.A.Catch[0].ErrorEquals",
        ),
    ],
)
def test_asl_errors_name_the_field(definition, field):
    with pytest.raises(AslError) as raised:
        validate_asl(definition)
    assert raised.value.field == field


def test_actors_interleave_on_virtual_time(clock):
    log = []

    def actor(name, naps):
        for nap in naps:
            log.append((name, round(clock.now() - start)))
            clock.sleep(nap)
        return name

    start = clock.now()
    results = clock.run_together(lambda: actor("a", [100, 100]), lambda: actor("b", [50, 200]))
    assert results == ["a", "b"]
    assert log == [("a", 0), ("b", 0), ("b", 50), ("a", 100)]
    assert 250 <= clock.now() - start < 252  # overlapping naps, not their sum


def test_an_actor_error_reaches_the_caller_after_the_others_finish(clock):
    finished = []

    def fails():
        clock.sleep(10)
        raise ValueError("step exploded")

    def keeps_going():
        clock.sleep(30)
        finished.append(True)

    with pytest.raises(ValueError, match="step exploded"):
        clock.run_together(fails, keeps_going)
    assert finished == [True]


def test_heartbeats_fire_inside_actors(clock):
    beats = []
    start = clock.now()

    def worker():
        with clock.every(300, lambda: beats.append(round(clock.now() - start))):
            clock.sleep(1000)

    clock.run_together(worker, lambda: clock.sleep(450))
    assert beats == [300, 600, 900]

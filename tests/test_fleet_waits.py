"""How a fleet run waits for a retry: the clock jumps on moto; on a real clock the workers keep polling."""

from __future__ import annotations

from fleetlab.backends.backend import open_backend
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import AgentClass, TopologySpec, provision
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.events.envelope import Envelope

SPEC = TopologySpec(agent_classes=(AgentClass("researcher", step_p95_seconds=40),), orchestrator=False)
ADVANCE = 61.5  # lab seconds: one visibility timeout and a bit, a length nothing else sleeps


def crash_once_and_run(backend, monkeypatch):
    """One step whose first attempt crashes; the run waits out the timeout once. The sleeps of ADVANCE seen."""
    topology = provision(backend, SPEC)
    try:
        fleet = Fleet(backend, topology, model=FakeModel(seed=1, latency=LatencyProfile(p50=1, p95=2)),
                      faults=FaultPlan(crashes=(Crash(CrashPoint.BEFORE_EFFECT, "conv-1-step-1", 1),)))
        slept = []
        sleep = backend.clock.sleep
        monkeypatch.setattr(backend.clock, "sleep", lambda s: (slept.append(s) if s == ADVANCE else None, sleep(s))[1])
        fleet.enqueue(Envelope("conv-1-step-1", "1", 1, "researcher"))
        fleet.run(advance=ADVANCE, idle_polls=3)
        return fleet.ledger.count("conv-1-step-1"), slept
    finally:
        topology.teardown()


def test_on_moto_the_run_jumps_the_clock_over_the_visibility_timeout(monkeypatch):
    backend = open_backend("moto")
    try:
        effects, slept = crash_once_and_run(backend, monkeypatch)
    finally:
        backend.close()
    assert effects == 1 and slept[:1] == [ADVANCE]


def test_on_a_real_clock_the_run_polls_through_the_timeout_and_takes_the_retry_when_it_comes(
        real_clock_backend, monkeypatch):
    effects, slept = crash_once_and_run(real_clock_backend, monkeypatch)
    assert effects == 1 and slept == []

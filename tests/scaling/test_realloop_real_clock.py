"""The small real loop on a real clock: LocalStack's code path (wall time, boto3 over HTTP) on a moto server.

The loop keeps its own time there: its pods and autoscaler are the library's, so a burst with production
durations runs in seconds, and only the queue's own timer (a killed pod's message coming back) is waited for.
"""

from __future__ import annotations

import time

import pytest

from fleetlab.composition.scaling.hpa import HpaSettings
from fleetlab.composition.scaling.realloop import run_real_loop
from fleetlab.composition.topology import experiment_queue, new_prefix

from .builders import so
from .test_realloop import FALL, RISE


@pytest.fixture(autouse=True)
def unscaled(monkeypatch):
    """These tests time the loop against wall seconds: a real clock at scale 1 (lab time = real time)."""
    monkeypatch.setenv("FLEETLAB_TIME_SCALE", "1")


def test_a_burst_with_production_durations_runs_on_the_loop_s_own_time(real_clock_backend):
    backend = real_clock_backend
    assert not backend.clock.virtual
    started = time.monotonic()
    with experiment_queue(backend, new_prefix("wall"), visibility_timeout=300) as queue:
        scaled = so(queue_length=5).with_trigger(queue_url=queue.url)
        run = run_real_loop(backend, queue.url, scaled, arrivals=[(0, 100)], step_seconds=90, concurrency=5, tick=5)
    wall = time.monotonic() - started
    assert run.finished and run.seconds == 450
    assert run.scaling == RISE + FALL  # the decisions of the virtual clock, from a real queue's counts
    assert run.ledger.summary(list(run.sent)).exactly_once and len(run.sent) == 100
    assert wall < 120  # 450 s of 90 s steps and 300 s windows, never slept through


def test_killed_steps_wait_for_the_queue_s_own_visibility_timeout(real_clock_backend):
    backend = real_clock_backend
    fast = HpaSettings(sync_period=1, downscale_stabilization=2)
    blind = so(queue_length=5, polling_interval=1, cooldown_period=2, scale_on_in_flight=False)
    waits: list[int] = []  # each ReceiveMessage's WaitTimeSeconds
    backend.client("sqs").meta.events.register(
        "provide-client-params.sqs.ReceiveMessage", lambda params, **_: waits.append(params.get("WaitTimeSeconds")))
    started = time.monotonic()
    with experiment_queue(backend, new_prefix("kill"), visibility_timeout=5) as queue:
        run = run_real_loop(backend, queue.url, blind.with_trigger(queue_url=queue.url), arrivals=[(0, 20)],
                            step_seconds=4, concurrency=5, tick=0.5, settings=fast, scale_down="kill",
                            max_seconds=6)
    wall = time.monotonic() - started
    # Blind to in-flight work, KEDA scales the fleet to zero at t=3 (cooldown 2 s after its last active poll),
    # killing 20 steps of 4 s. Their messages come back 5 s after their receive, on the queue's clock: the loop
    # waits for that before its t=5, long-polls for them, wakes the fleet and takes all 20 again.
    assert run.scaling[:3] == [(0, "keda", 0, 1), (0, "hpa", 1, 4), (3, "keda", 4, 0)]
    assert run.abandoned == 20 and not run.ledger.effects()
    assert [s.t for s in run.samples if s.working == 20] == [1, 2, 6]  # sampled at each poll, before receiving
    assert wall >= 5
    # One long poll, for the abandoned messages (a backend may requeue them late); every other receive is at once.
    assert [wait for wait in waits if wait] == [backend.receive_wait] and waits.count(0) == len(waits) - 1

"""The small real loop on moto and moto-server: real queue attributes drive KEDA and the HPA,
simulated replicas consume real messages, the effects ledger counts every document once."""

from __future__ import annotations

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition.scaling.realloop import read_queue, run_real_loop, send_documents
from fleetlab.composition.scaling.scaler import QueueAttributes
from fleetlab.composition.scaling.simulator import Pods, Workload, simulate
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.core.errors import InvalidInput

from .builders import so

# Hand-worked for 100 documents, queueLength 5, 5 steps per replica, 90 s steps (see test_simulator):
RISE = [(0, "keda", 0, 1), (0, "hpa", 1, 4), (15, "hpa", 4, 8), (30, "hpa", 8, 16), (45, "hpa", 16, 20)]
# 20 steps end at 90, 20 at 105, 40 at 120, 20 at 135. The HPA lets go of each proposal 300 s later
# (20 until 75: down at 390), and KEDA, active last at 120, scales to zero at the first poll after 420.
FALL = [(390, "hpa", 20, 16), (405, "hpa", 16, 12), (420, "hpa", 12, 4), (435, "hpa", 4, 1), (450, "keda", 1, 0)]


@pytest.fixture(scope="module", params=["moto", "moto-server"])
def backend(request):
    opened = open_backend(request.param)
    yield opened
    opened.close()


def test_a_burst_drains_and_the_replicas_follow_the_formulas(backend):
    with experiment_queue(backend, new_prefix("burst"), visibility_timeout=300) as queue:
        scaled = so(queue_length=5).with_trigger(queue_url=queue.url)
        run = run_real_loop(backend, queue.url, scaled, arrivals=[(0, 100)], step_seconds=90, concurrency=5,
                            tick=5)
        left = read_queue(backend.client("sqs"), queue.url)
    assert run.finished and run.seconds == 450
    assert run.scaling == RISE + FALL
    assert run.ledger.summary(list(run.sent)).exactly_once and len(run.sent) == 100
    assert {o.status for o in run.outcomes} == {"done"} and len(run.outcomes) == 100
    assert left == QueueAttributes(0, 0, 0)
    peak = max(run.samples, key=lambda s: s.in_flight)
    assert (peak.in_flight, peak.replicas) == (100, 20)  # read from the real queue's NotVisible count


def test_the_real_loop_and_the_simulator_agree(backend):
    with experiment_queue(backend, new_prefix("agree"), visibility_timeout=300) as queue:
        scaled = so(queue_length=4).with_trigger(queue_url=queue.url)
        real = run_real_loop(backend, queue.url, scaled, arrivals=[(0, 30), (60, 30)], step_seconds=45,
                             concurrency=3, tick=5)
    model = simulate(scaled, Workload(bursts=((0, 30), (60, 30))), Pods(step_seconds=45, concurrency=3),
                     seconds=real.seconds, dt=5)
    assert real.scaling == model.scaling
    row = lambda s: (s.t, s.visible, s.in_flight, s.replicas, s.ready, s.working)  # noqa: E731
    assert [row(s) for s in real.samples] == [row(s) for s in model.samples]  # the real queue, read as modelled
    assert real.ledger.summary(list(real.sent)).exactly_once


def long_steps_blind(backend, scale_down: str, max_seconds: float):
    """20 documents of 400 s steps, the scaler blind to in-flight messages: 4 replicas take all 20 at t=0."""
    with experiment_queue(backend, new_prefix(scale_down), visibility_timeout=700) as queue:
        scaled = so(queue_length=5, scale_on_in_flight=False).with_trigger(queue_url=queue.url)
        return run_real_loop(backend, queue.url, scaled, arrivals=[(0, 20)], step_seconds=400, concurrency=5,
                             tick=15, scale_down=scale_down, max_seconds=max_seconds)


def test_killed_replicas_never_finish_long_steps_they_cannot_see(backend):
    # The queue looks empty from t=15: the HPA drops to 1 at 315 (its proposal of 4 at t=0 has aged out) and
    # KEDA to 0 at 330, each kill abandoning the steps of the pods it removes. Abandoned messages come back
    # 700 s after their receive, the fleet wakes at the next poll (720) and is killed again at 1035 and 1050.
    run = long_steps_blind(backend, "kill", max_seconds=1500)
    assert not run.finished and run.abandoned == 40
    assert run.outcomes == [] and run.ledger.effects() == []
    kills = [(at, before, after) for at, _, before, after in run.scaling if after < before]
    assert kills == [(315, 4, 1), (330, 1, 0), (1035, 4, 1), (1050, 1, 0)]


def test_draining_replicas_finish_their_steps_after_the_scale_down(backend):
    run = long_steps_blind(backend, "drain", max_seconds=1500)
    assert run.finished and run.abandoned == 0
    assert run.ledger.summary(list(run.sent)).exactly_once
    assert {o.receive_count for o in run.outcomes} == {1}
    assert any(s.replicas == 0 and s.working == 20 for s in run.samples)  # scaled to zero, still working


def test_a_visibility_timeout_shorter_than_the_step_is_refused(backend):
    with experiment_queue(backend, new_prefix("vis"), visibility_timeout=60) as queue:
        with pytest.raises(InvalidInput) as raised:
            run_real_loop(backend, queue.url, so(), step_seconds=90)
    assert raised.value.field == "step_seconds"


def test_documents_are_sent_ten_at_a_time(backend):
    with experiment_queue(backend, new_prefix("send"), visibility_timeout=60) as queue:
        ids = send_documents(backend, queue.url, 23, prefix="paper")
        assert read_queue(backend.client("sqs"), queue.url).visible == 23
    assert ids[0] == "paper-0" and ids[-1] == "paper-22" and len(set(ids)) == 23

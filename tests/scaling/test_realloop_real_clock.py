"""The small real loop on a real clock: LocalStack's code path (wall time, boto3 over HTTP) on a moto server."""

from __future__ import annotations

from fleetlab.aws.topology import experiment_queue, new_prefix
from fleetlab.scaling.hpa import HpaSettings
from fleetlab.scaling.realloop import run_real_loop

from .builders import so


def test_a_short_burst_on_wall_time(real_clock_backend):
    backend = real_clock_backend
    assert not backend.clock.virtual
    fast = HpaSettings(sync_period=1, downscale_stabilization=2)
    with experiment_queue(backend, new_prefix("wall"), visibility_timeout=10) as queue:
        scaled = so(queue_length=5, polling_interval=1, cooldown_period=2).with_trigger(queue_url=queue.url)
        run = run_real_loop(backend, queue.url, scaled, arrivals=[(0, 20)], step_seconds=1, concurrency=5,
                            tick=0.25, settings=fast, max_seconds=30)
    assert run.finished
    # 20 messages: 4 replicas of 5 take them all at once and finish at t=1. The HPA's proposal of 4 stays in
    # its 2 s window until t=2; KEDA, active last at t=0, scales to zero at the first poll after t=2.
    assert run.scaling == [(0, "keda", 0, 1), (0, "hpa", 1, 4), (3, "keda", 4, 0)]
    assert run.ledger.summary(list(run.sent)).exactly_once and len(run.sent) == 20

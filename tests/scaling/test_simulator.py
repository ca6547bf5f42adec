"""The fleet simulator: a burst worked by hand, in-flight counting, scale-down modes, the provider cap."""

from __future__ import annotations

import pytest

from fleetlab.composition.scaling.simulator import Pods, Workload, simulate
from fleetlab.core.errors import InvalidInput

from .builders import so

BURST = Workload(bursts=((0, 100),))
FIVE_AT_ONCE = Pods(step_seconds=90, concurrency=5)


def test_a_burst_drains_at_the_fleet_s_pace():
    run = simulate(so(queue_length=5), BURST, FIVE_AT_ONCE, seconds=600)
    assert run.scaling[:5] == [(0, "keda", 0, 1), (0, "hpa", 1, 4), (15, "hpa", 4, 8), (30, "hpa", 8, 16),
                               (45, "hpa", 16, 20)]
    by_time = {s.t: s for s in run.samples}
    # 4, 8, 16 then 20 pods take 5 steps each after the syncs at 0, 15, 30, 45; the samples show the queue as
    # each sync read it, before those pods received
    assert [(by_time[t].visible, by_time[t].in_flight) for t in (0, 15, 30, 45, 60)] == [
        (100, 0), (80, 20), (60, 40), (20, 80), (0, 100)]
    assert [(by_time[t].replicas, by_time[t].working) for t in (0, 15, 30, 45)] == [(4, 0), (8, 20), (16, 40),
                                                                                   (20, 80)]
    # the steps end 90 s after they started: 20 at 90, 20 at 105, 40 at 120, 20 at 135
    assert [by_time[t].completed for t in (90, 105, 120, 135)] == [20, 40, 80, 100]
    assert by_time[120].age_of_oldest == 120 and by_time[135].age_of_oldest == 0
    assert run.steps_completed == 100 and run.steps_interrupted == 0
    # waits of 0, 15, 30, 45 s for 20, 20, 40, 20 steps: median 30 + 90, p95 45 + 90
    assert (run.latency(0.5), run.latency(0.95)) == (120, 135)
    assert run.scaling[-1] == (450, "keda", 1, 0)  # active last at 120: zero at the first poll after 420


KILL = Pods(step_seconds=600, concurrency=5, scale_down="kill", visibility_timeout=900)


def test_long_steps_need_in_flight_messages_counted():
    # Steps of 600 s outlast the 300 s windows. All 100 start by t=45 and run until 600 or later.
    blind = simulate(so(queue_length=5, scale_on_in_flight=False), BURST, KILL, seconds=400)
    # Counting only visible messages, the queue looks empty from t=45: the HPA comes down as its 300 s window
    # lets go of each earlier proposal, and KEDA (last active at 30) scales to zero at 360, killing every step.
    assert blind.scaling[5:] == [(315, "hpa", 20, 16), (330, "hpa", 16, 12), (345, "hpa", 12, 4),
                                 (360, "keda", 4, 0)]
    assert (blind.steps_interrupted, blind.steps_completed) == (100, 0)
    counted = simulate(so(queue_length=5), BURST, KILL, seconds=1200)
    assert (counted.steps_interrupted, counted.steps_completed) == (0, 100)
    assert counted.peak_replicas == 20


def test_killed_steps_come_back_one_visibility_timeout_after_the_kill():
    blind = simulate(so(queue_length=5, scale_on_in_flight=False), BURST, KILL, seconds=1300)
    at = {s.t: s for s in blind.samples}
    # each scale-down kills its share of the running steps: 20 at 315, 20 at 330, 40 at 345, 20 at 360
    assert (at[1200].visible, at[1200].in_flight, at[1200].working) == (0, 100, 0)  # held by SQS, nobody working
    assert at[1215].visible == 20
    assert (1230, "keda", 0, 1) in blind.scaling  # the first poll after they reappear activates the fleet again


def test_draining_pods_finish_their_steps():
    scaled = so(queue_length=5, scale_on_in_flight=False)
    run = simulate(scaled, BURST, Pods(step_seconds=600, concurrency=5, scale_down="drain"), seconds=1200)
    assert run.steps_interrupted == 0 and run.steps_completed == 100
    assert min(s.replicas for s in run.samples if 400 < s.t < 600) == 0  # scaled to zero while still working


def test_a_provider_cap_turns_pressure_into_throttling():
    capped = Pods(step_seconds=90, concurrency=5, provider_concurrency=25, throttle_backoff_seconds=30)
    run = simulate(so(queue_length=5), BURST, capped, seconds=900)
    assert max(s.working for s in run.samples) == 25
    assert run.throttled > 0 and run.steps_completed == 100
    free = simulate(so(queue_length=5), BURST, FIVE_AT_ONCE, seconds=900)
    assert free.throttled == 0 and free.latency(0.95) < run.latency(0.95)


def test_max_replicas_at_the_cap_avoids_throttling():
    capped = Pods(step_seconds=90, concurrency=5, provider_concurrency=25)
    run = simulate(so(queue_length=5, max_replica_count=5), BURST, capped, seconds=900)
    assert run.throttled == 0 and run.steps_completed == 100


def test_delayed_messages_count_only_when_the_trigger_says_so():
    workload = Workload(bursts=((0, 50),), delay_seconds=120)
    ignored = simulate(so(queue_length=5), workload, FIVE_AT_ONCE, seconds=100)
    counted = simulate(so(queue_length=5, scale_on_delayed=True), workload, FIVE_AT_ONCE, seconds=100)
    assert ignored.peak_replicas == 0 and counted.peak_replicas == 10
    assert counted.samples[0].delayed == 50


def test_pods_that_take_time_to_start_start_later():
    run = simulate(so(queue_length=5), BURST, Pods(step_seconds=90, concurrency=5, startup_seconds=30), seconds=60)
    by_time = {s.t: s for s in run.samples}
    assert (by_time[15].replicas, by_time[15].ready, by_time[15].working) == (8, 0, 0)
    assert (by_time[30].ready, by_time[30].working) == (4, 0)  # ready now; they receive after the sample
    assert (by_time[45].ready, by_time[45].working) == (8, 20)


def test_little_s_law_holds_in_steady_state():
    # 2 conversations a minute of 3 steps of 60 s: 0.1 steps/s in flight 60 s -> 6 in flight
    run = simulate(so(queue_length=2, min_replica_count=1), Workload(2, 3), Pods(step_seconds=60, concurrency=2),
                   seconds=3600, dt=1)
    tail = [s.in_flight + s.visible for s in run.samples if s.t > 1800]
    assert sum(tail) / len(tail) == pytest.approx(6, abs=0.5)
    assert run.conversations_completed * 3 <= run.steps_completed


@pytest.mark.parametrize("make, field", [
    (lambda: Pods(concurrency=0), "concurrency"),
    (lambda: Pods(scale_down="evict"), "scale_down"),
    (lambda: Workload(steps_per_conversation=0), "steps_per_conversation"),
    (lambda: simulate(so(), Workload(), seconds=0), "seconds"),
])
def test_bad_settings_are_named(make, field):
    with pytest.raises(InvalidInput) as raised:
        make()
    assert raised.value.field == field


def test_a_throttled_receive_is_not_a_started_step():
    capped = Pods(step_seconds=90, concurrency=5, provider_concurrency=25, throttle_backoff_seconds=30)
    run = simulate(so(queue_length=5), BURST, capped, seconds=900)
    assert run.throttled > 0
    # one wait per step that started, none per throttled receive: a throttled step's wait runs on
    assert sum(run.waits.values()) == run.steps_started == 100
    assert run.latency(1.0) >= 90 + 3 * 90  # 100 steps through 25 slots: the last start after three steps

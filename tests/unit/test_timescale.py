"""The scaled clock of real-clock backends: lab time, timers, jumps, skips, and the wait meter. No backend needed."""

from __future__ import annotations

import threading

import pytest

from fleetlab.core import timescale
from fleetlab.core.errors import ConfigError, InvalidInput
from fleetlab.core.timers import TimerDropped
from fleetlab.core.timescale import ScaledClock, describe_scale, service_seconds
from fleetlab.core.waits import WaitMeter

START = 1_800_000_000.0


class FakeRealTime:
    """Wall time that only moves when someone pauses on it: real waits proved without sleeping."""

    def __init__(self) -> None:
        self.now = START
        self.paused = 0.0

    def wall(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.paused += seconds
        self.now += seconds


@pytest.fixture
def real() -> FakeRealTime:
    return FakeRealTime()


@pytest.fixture
def announced() -> list[tuple[float, float]]:
    return []


@pytest.fixture
def clock(real: FakeRealTime, announced: list) -> ScaledClock:
    return ScaledClock(60, wall=real.wall, monotonic=real.wall, pause=real.pause,
                       announce=lambda seconds, ran: announced.append((seconds, ran)))


def test_lab_time_starts_at_the_real_time_and_runs_scale_times_faster(clock: ScaledClock, real: FakeRealTime) -> None:
    assert clock.now() == START
    real.now += 2.5
    assert clock.now() == START + 150


def test_a_sleep_waits_its_length_divided_by_the_scale(clock: ScaledClock, real: FakeRealTime, announced: list) -> None:
    clock.sleep(900)  # a 15-minute visibility timeout
    assert real.paused == pytest.approx(15)
    assert clock.now() == pytest.approx(START + 900)
    assert announced == []


def test_timers_fire_at_their_lab_instants_while_the_caller_sleeps(clock: ScaledClock) -> None:
    beats: list[float] = []
    with clock.every(300, lambda: beats.append(round(clock.now() - START))):
        clock.sleep(1_000)
    clock.sleep(600)  # the block has ended: no more beats
    assert beats == [300, 600, 900]


def test_a_long_sleep_runs_its_bounded_part_then_jumps_and_still_fires_its_timers(
    clock: ScaledClock, real: FakeRealTime, announced: list
) -> None:
    beats: list[float] = []
    with clock.every(1_000, lambda: beats.append(round(clock.now() - START))):
        clock.sleep(3 * 86_400)
    assert real.paused == pytest.approx(timescale.JUMP_AFTER)  # 20 real seconds: the services saw 20 lab minutes
    assert clock.now() == pytest.approx(START + 3 * 86_400)
    assert beats == list(range(1_000, 3 * 86_400 + 1, 1_000))  # every beat, at its lab instant, none lost
    assert announced == [(3 * 86_400, 1_200)]


def test_the_first_jump_in_a_process_is_announced_once(monkeypatch, capsys) -> None:
    monkeypatch.setattr(timescale, "_announced", threading.Event())
    timescale.announce_first_jump(3 * 86_400, 1_200.4)
    timescale.announce_first_jump(5 * 86_400, 1_200)
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [
        "clock: this 3 d wait runs its first 20 min in real time, then jumps: the library's own time (model steps, "
        "leases, idempotency windows) moves on at once, the services see only the first 20 min "
        "(docs/fidelity.md#time explains it; said once)"
    ]


def test_skip_moves_lab_time_at_once_and_fires_due_timers(clock: ScaledClock, real: FakeRealTime, announced: list) -> None:
    beats: list[float] = []
    with clock.every(400, lambda: beats.append(round(clock.now() - START))):
        clock.skip(901)  # a lease running out: no service needs to see it
    assert real.paused == 0
    assert clock.now() == pytest.approx(START + 901)
    assert beats == [400, 800] and announced == []


def test_service_timestamps_map_to_lab_time_and_back_across_jumps(clock: ScaledClock, real: FakeRealTime) -> None:
    real.now += 10  # lab +600
    clock.skip(3_600)  # lab +4200, at real +10
    real.now += 1  # lab +4260
    assert clock.lab_time(START + 5) == pytest.approx(START + 300)  # before the jump
    assert clock.lab_time(START + 11) == pytest.approx(START + 4_260)  # after it
    for lab in (START + 300, START + 4_260, START + 599):
        assert clock.lab_time(clock.service_time(lab)) == pytest.approx(lab)
    assert clock.service_time(START + 2_000) == pytest.approx(START + 10)  # inside the jump: its one real instant


def test_service_seconds_round_up_to_whole_seconds() -> None:
    assert [service_seconds(s, 60) for s in (0, 1, 30, 60, 61, 630, 900, 43_200)] == [0, 1, 1, 1, 2, 11, 15, 720]
    assert service_seconds(45, 1) == 45


def test_a_scale_that_does_not_divide_60_is_refused_and_so_is_a_bad_interval(clock: ScaledClock) -> None:
    with pytest.raises(InvalidInput, match="scale"):
        ScaledClock(7)
    with pytest.raises(ConfigError, match="interval must be positive"):
        with clock.every(0, lambda: None):
            pass


def test_the_banner_words_say_how_fast_lab_time_runs() -> None:
    assert describe_scale(60) == (
        "real, scaled x60: a lab minute passes in one real second; service timers scaled to match"
    )
    assert describe_scale(12) == "real, scaled x12: a lab minute passes in 5 real seconds; service timers scaled to match"
    assert describe_scale(1) == "real: every wait takes its full length"


def test_a_timer_an_actor_leaks_dies_with_its_thread() -> None:
    clock = ScaledClock(60)
    beats: list[str] = []
    kept = []

    def leaks() -> None:
        kept.append(clock.every(60, lambda: beats.append(threading.current_thread().name)))
        kept[0].__enter__()  # entered, never exited: the timer outlives the step
        clock.sleep(90)

    clock.run_together(leaks)
    clock.run_together(lambda: clock.sleep(120))
    assert beats == ["actor-0"]
    with pytest.warns(TimerDropped):
        kept.clear()  # its handle, dropped at last, still says the timer was never stopped


# --------------------------------------------------------------------------- the wait meter


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_meter_counts_only_the_time_every_joined_thread_waits() -> None:
    ticks = Ticks()
    meter = WaitMeter(monotonic=ticks)
    meter.join()
    with meter.waiting():
        ticks.now += 5
    assert meter.idle() == 5
    ticks.now += 3  # busy: not counted
    other = threading.Thread(target=meter.join)  # a second thread joins and never waits
    other.start()
    other.join()
    with meter.waiting():
        ticks.now += 4  # this thread waits, the other one is busy
    assert meter.idle() == 5 and not meter.all_waiting


def test_the_meter_ignores_threads_that_never_joined_and_nested_waits_count_once() -> None:
    ticks = Ticks()
    meter = WaitMeter(monotonic=ticks)
    with meter.waiting():  # not joined
        ticks.now += 2
    assert meter.idle() == 0
    meter.join()
    with meter.waiting(), meter.waiting():
        ticks.now += 2
    ticks.now += 1
    assert meter.idle() == 2
    meter.leave()
    assert meter.threads == ()


def test_a_scaled_clock_marks_its_sleeps_and_its_run_together_joins_on_the_meter() -> None:
    clock = ScaledClock(60)
    meter = WaitMeter()
    clock.meter = meter
    meter.join()
    clock.run_together(lambda: clock.sleep(30), lambda: clock.sleep(60))  # half a second and a second, real
    assert 0.9 <= meter.idle() <= 1.5
    meter.leave()

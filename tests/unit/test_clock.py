"""The clock's real-time waits, cancellation of actors, and excursions: no backend needed."""

import threading
import time
import warnings

import pytest

from fleetlab.core.clock import (
    ActorCancelled,
    RealClock,
    TimerDropped,
    VirtualClock,
    running,
    side_by_side,
    stop_threads,
    wait_until,
)
from fleetlab.core.errors import ConfigError, Timeout


class FakeRealTime:
    """A monotonic clock that only moves when someone pauses on it: bounds proved without sleeping."""

    def __init__(self):
        self.now = 0.0
        self.pauses = []

    def monotonic(self):
        return self.now

    def pause(self, seconds):
        self.pauses.append(seconds)
        self.now += seconds


@pytest.fixture
def clock():
    virtual = VirtualClock(start=1_800_000_000)
    yield virtual
    virtual.close()


def spin():
    while True:
        pass


def actor_threads():
    return [t for t in threading.enumerate() if t.name.startswith("actor-") and t.is_alive()]


def test_wait_until_returns_the_first_truthy_value():
    answers = iter([None, 0, "", {"status": "SUCCEEDED"}])
    real = FakeRealTime()
    value = wait_until(lambda: next(answers), timeout=5, what="x", interval=0.5, monotonic=real.monotonic,
                       pause=real.pause)
    assert value == {"status": "SUCCEEDED"}
    assert real.pauses == [0.5, 0.5, 0.5]


def test_wait_until_gives_up_at_the_bound_with_a_timeout_naming_what():
    real = FakeRealTime()
    polls = []
    with pytest.raises(Timeout, match="execution abc") as gave_up:
        RealClock(monotonic=real.monotonic, pause=real.pause).wait_until(
            lambda: polls.append(real.now), timeout=2.0, interval=0.5, what="execution abc"
        )
    assert polls == [0.0, 0.5, 1.0, 1.5, 2.0]  # one last look at the bound, never a poll past it
    assert real.now == 2.0
    assert gave_up.value.may_have_happened


def test_the_virtual_clock_waits_on_injected_real_time_not_on_its_own():
    real = FakeRealTime()
    virtual = VirtualClock(start=1_800_000_000, monotonic=real.monotonic, pause=real.pause)
    try:
        before = virtual.now()
        with pytest.raises(Timeout):
            virtual.wait_until(lambda: False, timeout=30, what="a callback")
        assert real.now == 30
        assert virtual.now() - before < 1  # no virtual jump: emulator timers run in real time
    finally:
        virtual.close()


def test_a_spinning_actor_is_cancelled_at_the_timeout_and_the_next_race_runs(clock):
    with pytest.raises(Timeout, match="actors still running after 0.3 s"):
        clock.run_together(spin, lambda: clock.sleep(60), timeout=0.3)
    assert actor_threads() == []
    assert clock.run_together(lambda: clock.sleep(5) or "a", lambda: "b") == ["a", "b"]


def test_cancel_from_another_thread_stops_spinning_and_waiting_actors(clock):
    outcome = {}

    def race():
        try:
            clock.run_together(spin, lambda: clock.sleep(60))
        except BaseException as exc:  # what the caller of run_together sees
            outcome["error"] = exc

    caller = threading.Thread(target=race)
    caller.start()
    clock.wait_until(lambda: len(actor_threads()) == 2, timeout=5, what="both actors")
    assert clock.cancel() == 0  # no thread outlived the stop
    caller.join(timeout=5)
    assert not caller.is_alive() and actor_threads() == []
    assert isinstance(outcome["error"], ActorCancelled)
    assert clock.run_together(lambda: "again") == ["again"]


def test_a_learner_catching_exception_cannot_swallow_the_cancel(clock):
    def stubborn():
        while True:
            try:
                clock.sleep(1)
            except Exception:  # a learner's broad except
                continue

    with pytest.raises(Timeout):
        clock.run_together(stubborn, spin, timeout=0.3)
    assert actor_threads() == []


def test_nesting_is_refused_while_a_group_runs(clock):
    with pytest.raises(ConfigError, match="cannot be nested"):
        clock.run_together(lambda: clock.run_together(lambda: None))
    assert clock.run_together(lambda: 1) == [1]


def test_an_excursion_takes_back_the_time_it_spent(clock):
    before = clock.now()
    with clock.excursion():
        clock.sleep(3 * 86_400)
        assert clock.now() - before >= 3 * 86_400
    assert abs(clock.now() - before) < 1


def test_time_held_still_moves_only_by_sleep_and_skip_and_ticks_again_after(clock):
    with clock.still():
        held = clock.now()
        time.sleep(0.02)  # real time passes (the subject here, not a wait for anything)
        assert clock.now() == held
        with clock.still():  # nested: the outer block still holds time when this one ends
            clock.sleep(60)
        time.sleep(0.02)
        assert clock.now() == held + 60
        clock.skip(5)
        assert clock.now() == held + 65
    after = clock.now()
    time.sleep(0.02)
    assert clock.now() > after


def test_a_real_clock_cannot_be_held_still():
    real = RealClock()
    with real.still():
        before = real.now()
        time.sleep(0.02)
        assert real.now() > before


def test_real_tasks_that_overrun_are_cancelled():
    real = RealClock()
    with pytest.raises(Timeout, match="tasks still running after 0.3 s"):
        real.run_together(spin, lambda: real.sleep(30), timeout=0.3)
    assert actor_threads() == []
    assert real.run_together(lambda: "a", lambda: "b") == ["a", "b"]


def test_a_timer_an_actor_leaks_dies_with_it(clock):
    """A learner's heartbeat left running (never exited) must not fire in a later thread."""
    beats, kept = [], []

    def leaks_a_timer():
        kept.append(clock.every(10, lambda: beats.append(threading.current_thread().name)))
        kept[0].__enter__()  # entered, never exited: the timer outlives the step
        clock.sleep(25)

    clock.run_together(leaks_a_timer)
    leaked = len(beats)
    clock.run_together(lambda: clock.sleep(100), lambda: clock.sleep(100))
    assert leaked == 2 and len(beats) == leaked
    with pytest.warns(TimerDropped):
        kept.clear()  # its handle, dropped at last, still says the timer was never stopped


def test_a_timer_dropped_while_running_warns_naming_the_fix_and_stops(clock):
    beats = []

    def beat():
        beats.append(clock.now())

    timer = clock.every(10, beat)
    timer.__enter__()
    clock.sleep(25)
    with pytest.warns(TimerDropped, match=r"every 10 s, calling .*beat\) was dropped while still running; "
                                          r"use it as a `with` block, or call its stop\(\)") as warned:
        del timer
    assert len(warned) == 1 and issubclass(TimerDropped, ResourceWarning)
    clock.sleep(100)
    assert len(beats) == 2


def test_a_timer_stopped_by_its_block_or_by_stop_never_warns(clock):
    beats = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with clock.every(10, lambda: beats.append("block")) as timer:
            clock.sleep(25)
        assert not timer.running
        early = clock.every(10, lambda: beats.append("stopped"))
        early.__enter__()
        clock.sleep(15)
        early.stop()
        early.stop()  # a second stop does nothing
        never_started = clock.every(10, lambda: beats.append("never"))
        del timer, early, never_started
        clock.sleep(100)
    assert beats == ["block", "block", "stopped"]
    assert [w.category for w in caught] == []


def test_a_timer_runs_one_block_only(clock):
    timer = clock.every(10, lambda: None)
    with timer:
        pass
    with pytest.raises(ConfigError, match="started already"):
        timer.__enter__()


def test_a_real_timer_dropped_while_running_warns_and_its_thread_ends():
    beaten = threading.Event()
    timer = RealClock().every(0.01, beaten.set)
    timer.__enter__()
    assert beaten.wait(5)
    with pytest.warns(TimerDropped, match="use it as a `with` block, or call its stop"):
        del timer
    assert [t for t in threading.enumerate() if t.name == "fleetlab-every"] == []


def test_a_real_timer_keeps_its_rate_so_a_beat_already_due_runs_at_once():
    readings = iter([0.0])  # the timer starts at 0; every later reading is an hour on: each beat is overdue

    def monotonic():
        return next(readings, 3_600.0)

    beats = threading.Semaphore(0)
    with RealClock(monotonic=monotonic).every(60, beats.release):
        # the beat due at 60 s is overdue, so it runs at once, and so does the one due now (the hour's
        # mark); the missed ones in between do not pile up: the next is due a full interval on
        assert beats.acquire(timeout=5) and beats.acquire(timeout=5)
        assert not beats.acquire(timeout=0.3)


def test_side_by_side_on_a_real_clock_runs_experiments_at_once_and_keeps_their_order():
    first_started, second_started = threading.Event(), threading.Event()

    def first():
        first_started.set()
        return "first" if second_started.wait(5) else "alone"  # only true when both run at once

    def second():
        second_started.set()
        return "second" if first_started.wait(5) else "alone"

    assert side_by_side(RealClock(), first, second, timeout=10) == ["first", "second"]


def test_side_by_side_on_a_virtual_clock_runs_experiments_in_turn(clock):
    order = []

    def experiment(name):
        def run():
            order.append(f"{name} starts")
            clock.sleep(60)  # free on the virtual clock; another experiment running now would start in between
            order.append(f"{name} ends")
            return name
        return run

    assert side_by_side(clock, experiment("a"), experiment("b")) == ["a", "b"]
    assert order == ["a starts", "a ends", "b starts", "b ends"]


def test_side_by_side_on_a_virtual_clock_lets_an_experiment_race_its_own_actors(clock):
    def race():
        return clock.run_together(lambda: 1, lambda: 2)

    assert side_by_side(clock, race, race) == [[1, 2], [1, 2]]


def test_side_by_side_on_a_real_clock_raises_an_experiments_error():
    def broken():
        raise ValueError("the queue was not there")

    with pytest.raises(ValueError, match="the queue was not there"):
        side_by_side(RealClock(), lambda: 1, broken, timeout=10)


class EndedThread(threading.Thread):
    """A thread that has ended, whose ident a running thread now has (Linux hands idents on)."""

    def __init__(self, ident):
        super().__init__()
        self.reused = ident

    @property
    def ident(self):
        return self.reused


def test_a_stop_never_reaches_the_thread_that_took_an_ended_threads_ident():
    release, stopped = threading.Event(), []

    def a_backends_own_worker():
        try:
            release.wait(5)
        except ActorCancelled:
            stopped.append(True)

    other = threading.Thread(target=a_backends_own_worker)
    other.start()
    ended = EndedThread(other.ident)
    try:
        assert not running(ended)
        assert stop_threads([ended], grace=0.2, monotonic=time.monotonic) == 0
    finally:
        release.set()
        other.join()
    assert stopped == []


@pytest.mark.parametrize("make", [lambda: VirtualClock(start=1_800_000_000), RealClock], ids=["virtual", "real"])
def test_a_timer_handed_what_a_call_returned_is_refused_naming_the_fix(make):
    clock = make()
    try:
        with pytest.raises(ConfigError, match=r"every\(5, \.\.\.\) takes the function to call each interval, and was "
                                              r"handed None: pass the function itself \(beat, not beat\(\)"):
            clock.every(5, None)
    finally:
        clock.close()

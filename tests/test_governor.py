"""The distributed token governor on moto's DynamoDB: the counter, allowances, headroom, windows,
admission control at the dispatcher, AIMD, and the batch-size sweep."""

import itertools
import random
import time

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition import admission
from fleetlab.composition.admission import Dispatcher, work_bodies
from fleetlab.composition.concurrency import AdaptiveConcurrency
from fleetlab.composition.topology import experiment_queue, experiment_table, new_prefix
from fleetlab.core.errors import InvalidInput, QuotaExhausted
from fleetlab.course.experiments.chaos import batch_size_sweep
from fleetlab.services.state.governor import Allowance, Quota, TokenGovernor


@pytest.fixture(scope="module")
def backend():
    opened = open_backend("moto")
    yield opened
    opened.close()


@pytest.fixture
def table(backend):
    with experiment_table(backend, new_prefix("gov")) as name:
        yield name


def governor_on(backend, table, tokens, *, headroom=0.0, window_seconds=3600.0):
    governor = TokenGovernor(backend.client("dynamodb"), table, backend.clock,
                             Quota("q", tokens, window_seconds, headroom))
    backend.clock.sleep(governor.next_window() - backend.clock.now())  # start as a window opens
    return governor


def racing_workers(backend, governor, workers, *, batch, seed):
    """``workers`` actors spending one token per call, a seeded 10-50 s apart, until the governor refuses.

    Each keeps its own timeline from one start (the virtual clock ticks while actors run), so the
    instants they take turns at depend on the seed alone.
    """
    allowances = [Allowance(governor, batch=batch) for _ in range(workers)]
    start = backend.clock.now()

    def work(allowance, rng):
        when = start
        while True:
            try:
                allowance.spend(1)
            except QuotaExhausted:
                return allowance.spent
            when += rng.uniform(10, 50)
            backend.clock.sleep(when - backend.clock.now())

    rngs = [random.Random(seed + n) for n in range(workers)]
    return backend.clock.run_together(*[lambda a=a, r=r: work(a, r) for a, r in zip(allowances, rngs)])


def test_racing_naive_workers_use_the_quota_exactly_and_never_past_it(backend, table):
    governor = governor_on(backend, table, 120)
    spent = racing_workers(backend, governor, 6, batch=1, seed=3)
    stats = governor.stats
    assert sum(spent) == governor.used() == 120  # every token used, none past the quota
    assert stats.granted == 120 and stats.drawn == 120  # naive: one granted write per call
    assert stats.exhausted == 6  # each worker stopped at its one refusal
    assert stats.conflicts == 115  # this seed's interleaving: most naive draws found the counter moved
    assert stats.writes == stats.granted + stats.exhausted + stats.conflicts == 241


def test_a_stale_view_is_a_conflict_and_a_full_window_is_exhaustion(backend, table):
    governor = governor_on(backend, table, 10)
    first, second = Allowance(governor, batch=4), Allowance(governor, batch=4)  # both saw an empty counter
    assert first.ensure(4) and second.ensure(4)  # the second write found the counter moved, retried, won
    assert (governor.stats.conflicts, governor.stats.exhausted, governor.used()) == (1, 0, 8)
    assert not first.ensure(5)  # 8 used + 4 drawn > 10: refused, with no conflict counted
    assert (governor.stats.conflicts, governor.stats.exhausted, governor.used()) == (1, 1, 8)
    with pytest.raises(QuotaExhausted) as refused:
        second.spend(5)
    assert refused.value.retry_at == governor.next_window() and not refused.value.may_have_happened


def test_batched_draws_write_once_per_batch_not_once_per_call(backend, table):
    governor = governor_on(backend, table, 120)
    spent = racing_workers(backend, governor, 6, batch=10, seed=3)
    stats = governor.stats
    assert sum(spent) == 120 and governor.used() == 120
    assert stats.granted == 12  # 120 tokens in draws of 10
    assert (stats.exhausted, stats.conflicts) == (6, 11)
    assert stats.writes == stats.granted + stats.exhausted + stats.conflicts == 29  # the naive governor: 241


def test_headroom_is_kept_for_priority_draws(backend, table):
    governor = governor_on(backend, table, 100, headroom=0.2)
    ordinary = Allowance(governor, batch=40)
    assert ordinary.ensure(1) and ordinary.ensure(41)  # 80 drawn
    assert not ordinary.ensure(81)  # the last 20 are kept back
    priority = Allowance(governor, batch=20, priority=True)
    assert priority.ensure(20) and governor.used() == 100
    assert not priority.ensure(21)


def test_unspent_tokens_go_back_in_their_window_and_expire_after_it(backend, table):
    governor = governor_on(backend, table, 50)
    early, late = Allowance(governor, batch=20), Allowance(governor, batch=20)
    early.spend(5)
    assert early.give_back() == 15 and governor.used() == 5
    late.spend(5)
    backend.clock.sleep(governor.quota.window_seconds)  # the window rolls over with 15 tokens unspent
    assert governor.used() == 0
    assert late.give_back() == 0 and late.expired == 15
    late.spend(50 - 20)
    assert governor.used() == 30 and late.expired == 15


def burst_run(backend, table, *, admission, concurrency=None):
    """Three bursts of 12 calls, 200 s apart, on a quota that pays for about 10 calls in ten minutes."""
    governor = governor_on(backend, table, 20, window_seconds=600)
    bodies = work_bodies(36, seed=5, tokens=(1, 3), seconds=(20.0, 40.0))
    arrivals = [(0.0, bodies[:12]), (200.0, bodies[12:24]), (400.0, bodies[24:])]
    with experiment_queue(backend, new_prefix("gov"), visibility_timeout=300) as queue:
        dispatcher = Dispatcher(backend, queue.url, governor, workers=4, batch=2, call_tokens=3,
                                admission=admission, concurrency=concurrency)
        return dispatcher.run(arrivals, max_seconds=9000, sample_seconds=100), sum(body["tokens"] for body in bodies)


def test_admission_control_holds_the_burst_on_the_queue_and_fails_no_call(backend, table):
    run, tokens = burst_run(backend, table, admission=True)
    assert run.failed_calls == 0 and run.holds > 0
    assert run.calls == 36 and run.left == 0
    depths = [depth for _, depth in run.depth]
    assert depths[:6] == [0, 5, 17, 17, 29, 29]  # the first window's bursts pile up: the queue absorbs them
    assert run.spent == tokens  # every call paid for, once
    assert (run.holds, run.stats.exhausted, run.stats.conflicts, run.stats.writes) == (19, 19, 25, 80)


def test_without_admission_the_same_burst_fails_calls(backend, table):
    run, _ = burst_run(backend, table, admission=False)
    assert run.failed_calls > 0
    assert run.calls == 36 and run.left == 0  # the failed ones came back after their visibility timeout


def test_aimd_adds_one_per_success_and_halves_on_a_throttle():
    window = AdaptiveConcurrency(initial=4, maximum=10)
    assert [window.on_success() for _ in range(3)] == [5, 6, 7]
    assert window.on_throttle() == 3  # 7 * 0.5
    assert [window.on_throttle() for _ in range(3)] == [1, 1, 1]  # never below the minimum
    assert [window.on_success() for _ in range(12)][-1] == 10  # never above the maximum


def test_the_dispatchers_window_shrinks_when_the_governor_refuses(backend, table):
    window = AdaptiveConcurrency(initial=4, maximum=4)
    run, _ = burst_run(backend, table, admission=True, concurrency=window)
    assert run.failed_calls == 0 and run.calls == 36
    assert [limit for _, limit in run.limits][:4] == [2, 1, 2, 1]  # halved at each refusal, regrown by calls
    assert run.holds == 12  # fewer workers asking: fewer refusals than the 19 of four steady workers


def test_the_sweep_trades_conflicts_for_stranded_quota(backend):
    rows = batch_size_sweep(backend, batch_sizes=(1, 10), workers=4, quota=60, messages=60, seed=11)
    naive, batched = rows
    assert (naive.batch, batched.batch) == (1, 10)
    assert (naive.writes, naive.conflicts, naive.spent, naive.stranded) == NAIVE_SWEEP
    assert (batched.writes, batched.conflicts, batched.spent, batched.stranded) == (12, 2, 54, 6)
    assert naive.quota_use == round(59 / 60, 3) and batched.stranded_share == 0.1


NAIVE_SWEEP = (49, 20, 59, 1)  # writes, conflicts, tokens spent, tokens stranded


def dispatched_across_a_window_end(backend, *, slow_sampler):
    """A burst sent 1 s before the quota's window ends: the workers' first turns are due in the old window."""
    with experiment_table(backend, new_prefix("gov")) as table, \
            experiment_queue(backend, new_prefix("gov"), visibility_timeout=300) as queue:
        governor = governor_on(backend, table, 20, window_seconds=600)
        dispatcher = Dispatcher(backend, queue.url, governor, workers=4, batch=2, call_tokens=3, poll_seconds=60)
        backend.clock.sleep(governor.next_window() - 1.2 - backend.clock.now())  # the run starts at -1 s
        with pytest.MonkeyPatch.context() as patch:
            if slow_sampler:  # its first depth is read before any worker's first turn, all due at -1 s
                patch.setattr(admission, "depth", slow(admission.depth))
            run = dispatcher.run([(0.0, work_bodies(12, seed=5, tokens=(1, 3), seconds=(20.0, 40.0)))],
                                 max_seconds=3000, sample_seconds=100)
    return run.calls, run.holds, run.spent, run.expired, run.returned, run.stats


def slow(call):
    """``call``, its first time slow."""
    calls = itertools.count()

    def slowly(*args, **kwargs):
        if next(calls) == 0:
            time.sleep(SLOW_CALL)  # a fault injected (a busy machine), not a wait for anything
        return call(*args, **kwargs)

    return slowly


SLOW_CALL = 1.5  # real seconds, and so virtual ones too: the virtual clock ticks while an actor runs


def test_a_busy_machine_draws_from_the_window_a_turn_was_due_in(backend):
    quick = dispatched_across_a_window_end(backend, slow_sampler=False)
    assert quick[3] > 0  # the first draws were made in the old window, and what was left of them expired
    assert dispatched_across_a_window_end(backend, slow_sampler=True) == quick


@pytest.mark.parametrize(("make", "field"), [
    (lambda: Quota("q", 0), "tokens"),
    (lambda: Quota("q", -5), "tokens"),
    (lambda: Quota("q", 10.5), "tokens"),
    (lambda: Quota("", 10), "name"),
    (lambda: Quota("q", 10, window_seconds=0), "window_seconds"),
    (lambda: Quota("q", 10, headroom=1.0), "headroom"),
    (lambda: Quota("q", 10, headroom=-0.1), "headroom"),
    (lambda: AdaptiveConcurrency(initial=1, maximum=4, decrease=1.0), "decrease"),
    (lambda: AdaptiveConcurrency(initial=1, maximum=4, increase=0), "increase"),
    (lambda: AdaptiveConcurrency(initial=5, maximum=4), "initial"),
    (lambda: AdaptiveConcurrency(initial=1, maximum=4, minimum=0), "minimum"),
])
def test_bad_settings_name_their_field(make, field):
    with pytest.raises(InvalidInput) as raised:
        make()
    assert raised.value.field == field


@pytest.mark.parametrize(("batch", "field"), [(0, "batch"), (-1, "batch"), (81, "batch")])
def test_a_batch_outside_the_usable_quota_is_refused(backend, table, batch, field):
    governor = governor_on(backend, table, 100, headroom=0.2)
    with pytest.raises(InvalidInput) as raised:
        Allowance(governor, batch=batch)
    assert raised.value.field == field


def test_a_dispatcher_with_bad_settings_names_the_field(backend, table):
    governor = governor_on(backend, table, 100)
    for settings, field in (({"workers": 0}, "workers"), ({"call_tokens": 0}, "call_tokens"),
                            ({"batch": 0}, "batch"), ({"poll_seconds": 0}, "poll_seconds")):
        chosen = {"workers": 2, "batch": 5, "call_tokens": 3, **settings}
        with pytest.raises(InvalidInput) as raised:
            Dispatcher(backend, "unused", governor, **chosen)
        assert raised.value.field == field
    dispatcher = Dispatcher(backend, "unused", governor, workers=2, batch=5, call_tokens=3)
    for settings, field in (({"max_seconds": 0}, "max_seconds"), ({"max_seconds": 60, "sample_seconds": -1},
                                                                    "sample_seconds")):
        with pytest.raises(InvalidInput) as raised:
            dispatcher.run([], **settings)
        assert raised.value.field == field


def test_the_tradeoff_figure_has_two_titled_labelled_panels():
    from fleetlab.display import batch_size_tradeoff

    rows = [{"batch": b, "conflicts": c, "writes_per_call": w, "quota_use": u, "stranded_share": s}
            for b, c, w, u, s in ((10, 11, 0.4, 0.94, 0.06), (1, 89, 2.0, 0.97, 0.03), (50, 0, 0.13, 0.63, 0.37))]
    figure = batch_size_tradeoff(rows)
    contention, use = figure.axes[:2]
    assert figure._suptitle.get_text() and contention.get_title() and use.get_title()
    assert all(axes.get_xlabel() and axes.get_ylabel() for axes in (contention, use))
    assert list(contention.get_lines()[0].get_xdata()) == [1, 10, 50]  # drawn in batch order
    assert list(use.get_lines()[1].get_ydata()) == [0.03, 0.06, 0.37]
    with pytest.raises(InvalidInput) as raised:
        batch_size_tradeoff([{"batch": 1}])
    assert raised.value.field == "rows"

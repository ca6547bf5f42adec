"""Archive and replay on every backend: what an idempotent and a non-idempotent target each do with a replay."""

import datetime as dt

import pytest

from fleetlab.composition.topology import new_prefix
from fleetlab.course.experiments.replay import COMPLETED_STEPS, ReplayBench, Target
from fleetlab.services.events.replay import excluding_replays

pytestmark = pytest.mark.contract

N = 5
STEPS = [f"step-{n}" for n in range(1, N + 1)]
IDEMPOTENT = Target("results-store", "saves the result", "trace_id")
NAIVE = Target("billing-webhook", "charges the customer")


def seconds(iso_time):
    return dt.datetime.fromisoformat(iso_time.replace("Z", "+00:00")).timestamp()


def replayed_once(bench, backend):
    """Publish N steps, deliver them, replay the archive once, deliver again."""
    published = backend.clock.now()
    bench.publish(STEPS)
    bench.deliver(expected=N * len(bench.targets))
    bench.replay(since=published - 60)
    return bench.deliver(expected=N * len(bench.targets))


def test_a_replay_duplicates_nothing_behind_the_store_and_every_step_behind_a_naive_target(backend):
    with ReplayBench.open(backend, new_prefix("ct"), (IDEMPOTENT, NAIVE)) as bench:
        replayed = replayed_once(bench, backend)
        assert sorted(d.trace_id for d in replayed if d.target == NAIVE.name) == STEPS
        assert all(d.replay_name for d in replayed)
        assert sum(bench.effects(IDEMPOTENT.name).values()) == N
        assert bench.duplicates(IDEMPOTENT.name) == {}
        assert sum(bench.effects(NAIVE.name).values()) == 2 * N
        assert bench.duplicates(NAIVE.name) == {step: 2 for step in STEPS}


def test_a_pattern_that_excludes_replays_delivers_originals_and_drops_replays(backend):
    patterns = {NAIVE.name: excluding_replays(COMPLETED_STEPS)}
    with ReplayBench.open(backend, new_prefix("ct"), (IDEMPOTENT, NAIVE), patterns=patterns) as bench:
        replayed = replayed_once(bench, backend)
        originals = [d for d in bench.deliveries if d.target == NAIVE.name and d.replay_name is None]
        assert sorted(d.trace_id for d in originals) == STEPS
        assert [d for d in replayed if d.target == NAIVE.name] == []
        assert sorted(d.trace_id for d in replayed if d.target == IDEMPOTENT.name) == STEPS
        assert bench.effects(NAIVE.name) == {step: 1 for step in STEPS}


def test_the_archives_managed_rule_keeps_replays_out_of_the_archive(backend):
    with ReplayBench.open(backend, new_prefix("ct"), (NAIVE,)) as bench:
        replayed_once(bench, backend)
        events = backend.client("events")
        rules = events.list_rules(EventBusName=bench.bus_name)["Rules"]
        managed = next(r for r in rules if r["Name"] == f"Events-Archive-{bench.archive.name}")
        assert '"replay-name": [{"exists": false}]' in managed["EventPattern"]
        assert events.describe_archive(ArchiveName=bench.archive.name)["EventCount"] == N


def test_a_replayed_event_carries_the_replay_name_and_the_original_time(backend):
    with ReplayBench.open(backend, new_prefix("ct"), (NAIVE,)) as bench:
        replayed = replayed_once(bench, backend)
        originals = {d.trace_id: d for d in bench.deliveries if d.replay_name is None}
        assert {d.replay_name for d in replayed} == {f"{bench.prefix}replay-1"}
        assert {d.trace_id for d in replayed} == set(originals)
        # moto renders the same instant to the second two ways (it can differ by one): compare within a second
        assert all(abs(seconds(d.event_time) - seconds(originals[d.trace_id].event_time)) <= 1 for d in replayed)

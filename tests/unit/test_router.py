"""The router in front of the fake model: seed 000's fallback finding, retries by the error's flag,
allowed fails and cooldowns on the clock, the limit per group, and every bad setting. No backend needed:
the router wraps the fake model and keeps its time on the virtual clock."""

import hashlib
import random
from dataclasses import replace

import pytest

from fleetlab.core.clock import VirtualClock
from fleetlab.core.errors import GroupAtCapacity, InvalidInput, ModelError
from fleetlab.services.agents.model import FakeModel, LatencyProfile
from fleetlab.services.agents.router import ModelGroup, RouteError, Router, RouterSettings, RouteStatus

SEED = 20261202
QUICK = LatencyProfile(p50=1, p95=2)


@pytest.fixture
def clock():
    virtual = VirtualClock(start=1_800_000_000)
    yield virtual
    virtual.close()


def two_groups(*, outage="transient", fallback=True):
    """Seed 000's gateway: a primary group of two deployments, one hard-down, and an overflow group."""
    primary = ModelGroup("agent-primary", (FakeModel(seed=SEED, name="sonnet", outage=outage),
                                           FakeModel(seed=SEED, name="haiku")))
    overflow = ModelGroup("agent-overflow", (FakeModel(seed=SEED, name="nova"),))
    fallbacks = {"agent-primary": "agent-overflow"} if fallback else {}
    return RouterSettings(groups=(primary, overflow), primary="agent-primary", fallbacks=fallbacks, seed=SEED)


def route_all(router, clock, n, prefix="req"):
    return [router.route(f"{prefix}-{i}", clock) for i in range(n)]


def only(name, **model):
    """A one-deployment group named after its deployment."""
    return ModelGroup(name, (FakeModel(seed=SEED, name=name, latency=QUICK, **model),))


# Seed 000: in-group retries alone leak errors when a deployment is hard-down (there, 2 of 30);
# an explicit cross-group fallback delivers every request (30 of 30).


def test_in_group_retries_alone_leak_errors_on_a_hard_down_deployment(clock):
    router = Router(two_groups(fallback=False))
    outcomes = route_all(router, clock, 30)
    leaked = [o for o in outcomes if not o.delivered]
    assert len(leaked) == 2
    for outcome in leaked:  # three picks in a row landed on the dead deployment before it was benched
        assert (outcome.status, outcome.attempts, outcome.retries, outcome.fallbacks) == (RouteStatus.FAILED, 3, 2, 0)
        assert outcome.errors == {RouteError.TRANSIENT: 3}
        assert (outcome.error.deployment, outcome.error.transient) == ("sonnet", True)
    tally = router.tally()
    assert tally.by_status == {RouteStatus.SERVED: 28, RouteStatus.FAILED: 2}
    assert tally.served_by == {"haiku": 28}
    assert tally.cooldowns > 0


def test_a_cross_group_fallback_delivers_every_request(clock):
    router = Router(two_groups(fallback=True))
    outcomes = route_all(router, clock, 30)
    assert [o for o in outcomes if not o.delivered] == []
    fell_back = [o for o in outcomes if o.fallbacks]
    assert fell_back and {o.deployment for o in fell_back} == {"nova"}
    assert {o.group for o in fell_back} == {"agent-overflow"}
    tally = router.tally()
    assert tally.by_status == {RouteStatus.SERVED: 30}
    assert tally.fallbacks == len(fell_back) == tally.served_by["nova"]
    assert tally.errors[RouteError.TRANSIENT] > 0  # the dead deployment still failed; no caller saw it


def test_the_same_seed_routes_the_same_way(clock):
    def run():
        outcomes = route_all(Router(two_groups(fallback=False)), clock, 30)
        return [(o.status, o.deployment, o.attempts, o.retries, o.errors) for o in outcomes]

    assert run() == run()


def test_a_permanent_error_leaves_the_group_at_once(clock):
    alone = Router(two_groups(outage="permanent", fallback=False))
    leaked = [o for o in route_all(alone, clock, 30) if not o.delivered]
    assert leaked
    for outcome in leaked:  # no retry inside the group: one call, one permanent error
        assert (outcome.attempts, outcome.retries, outcome.errors) == (1, 0, {RouteError.PERMANENT: 1})
    routed = Router(two_groups(outage="permanent", fallback=True))
    outcomes = route_all(routed, clock, 30)
    assert all(o.delivered for o in outcomes)
    for outcome in (o for o in outcomes if o.errors):
        assert (outcome.attempts, outcome.retries, outcome.fallbacks, outcome.deployment) == (2, 0, 1, "nova")


def test_transient_errors_are_retried_and_leak_only_when_every_try_fails(clock):
    flaky = FakeModel(seed=SEED, name="flaky", latency=QUICK, transient_failure_rate=0.3)
    router = Router(RouterSettings(groups=(ModelGroup("g", (flaky,)),), primary="g", num_retries=2,
                                   allowed_fails=10))
    outcomes = route_all(router, clock, 200)

    def fails(trace_id, attempt):  # the deployment alone, called as the router numbers its calls
        try:
            flaky.invoke(trace_id, attempt, clock)
        except ModelError:
            return True
        return False

    expected_failed = {f"req-{i}" for i in range(200) if all(fails(f"req-{i}", k) for k in (1, 2, 3))}
    assert expected_failed
    assert {o.trace_id for o in outcomes if not o.delivered} == expected_failed
    for outcome in outcomes:
        assert outcome.errors.get(RouteError.TRANSIENT, 0) == outcome.retries + (not outcome.delivered)
    assert router.tally().retries > len(expected_failed) * 2  # some calls were saved by a retry


def test_a_callers_next_attempt_draws_afresh(clock):
    flaky = FakeModel(seed=SEED, name="flaky", latency=QUICK, transient_failure_rate=0.5)
    router = Router(RouterSettings(groups=(ModelGroup("g", (flaky,)),), primary="g", num_retries=0,
                                   allowed_fails=100))
    first = [router.route(f"t-{i}", clock, attempt=1).delivered for i in range(40)]
    second = [router.route(f"t-{i}", clock, attempt=2).delivered for i in range(40)]
    assert first != second


# Allowed fails, then a cooldown on the clock.


def test_a_deployment_is_benched_one_failure_past_allowed_fails(clock):
    router = Router(RouterSettings(groups=(only("down", outage="transient"),), primary="down", num_retries=0,
                                   allowed_fails=2, cooldown=60))
    for expected in ([], [], ["down"]):
        router.route("t", clock)
        assert router.cooling_down(clock) == expected


def fails(model, trace_id, clock):
    """Whether the model fails the first attempt at trace_id (its draws are seeded)."""
    try:
        model.invoke(trace_id, 1, clock)
    except ModelError:
        return True
    return False


def test_a_success_clears_the_count_of_failures(clock):
    model = FakeModel(seed=SEED, name="m", latency=QUICK, transient_failure_rate=0.5)
    ids = [f"t-{i}" for i in range(40)]
    failing = [trace for trace in ids if fails(model, trace, clock)]
    passing = [trace for trace in ids if trace not in failing]
    router = Router(RouterSettings(groups=(ModelGroup("m", (model,)),), primary="m", num_retries=0, allowed_fails=2))
    for trace in (failing[0], failing[1], passing[0], failing[2], failing[3]):
        router.route(trace, clock)
    assert router.cooling_down(clock) == []  # four failures, never three in a row
    router.route(failing[4], clock)
    assert router.cooling_down(clock) == ["m"]


def test_a_rejected_input_never_benches_a_healthy_deployment(clock):
    router = Router(RouterSettings(groups=(only("m", poison=frozenset({"bad"})),), primary="m", num_retries=0,
                                   allowed_fails=0))
    rejected = [router.route("bad", clock, attempt=attempt) for attempt in range(1, 6)]
    assert all(outcome.errors == {RouteError.PERMANENT: 1} for outcome in rejected)
    assert router.cooling_down(clock) == [] and router.tally().cooldowns == 0
    assert router.route("good", clock).delivered


def test_a_benched_deployment_is_skipped_until_its_cooldown_ends(clock):
    router = Router(RouterSettings(groups=(only("down", outage="transient"),), primary="down", num_retries=0,
                                   allowed_fails=0, cooldown=60))
    assert router.route("t-1", clock).errors == {RouteError.TRANSIENT: 1}
    benched = router.route("t-2", clock)
    assert (benched.status, benched.attempts, benched.errors) == (RouteStatus.FAILED, 0, {RouteError.COOLING_DOWN: 1})
    clock.sleep(59)
    assert router.route("t-3", clock).errors == {RouteError.COOLING_DOWN: 1}
    clock.sleep(1.5)
    assert router.cooling_down(clock) == []
    back = router.route("t-4", clock)
    assert (back.attempts, back.errors) == (1, {RouteError.TRANSIENT: 1})


def test_while_benched_the_group_sends_every_call_to_its_healthy_deployment(clock):
    group = ModelGroup("g", (FakeModel(seed=SEED, name="down", outage="transient"),
                             FakeModel(seed=SEED, name="up", latency=QUICK)))
    router = Router(RouterSettings(groups=(group,), primary="g", allowed_fails=0, cooldown=600))
    outcomes = route_all(router, clock, 60)
    first_strike = next(i for i, o in enumerate(outcomes) if o.errors)
    assert router.cooling_down(clock) == ["down"]
    after = outcomes[first_strike + 1:]
    assert after and all(o.errors == {} and o.deployment == "up" for o in after)
    clock.sleep(600)
    back = route_all(router, clock, 20, prefix="later")
    assert any(o.errors == {RouteError.TRANSIENT: 1} and o.deployment == "up" for o in back)


# The limit per group: a primary outage must not become a fallback outage.


def primary_outage(overflow_cap):
    """Every call fails over from a dead primary to an overflow group with this cap (benching left out)."""
    overflow = ModelGroup("agent-overflow", (FakeModel(seed=SEED, name="nova"),), max_in_flight=overflow_cap)
    return RouterSettings(groups=(only("sonnet", outage="transient"), overflow), primary="sonnet",
                          fallbacks={"sonnet": "agent-overflow"}, allowed_fails=100)


def test_a_full_fallback_group_refuses_the_overflow(clock):
    router = Router(primary_outage(overflow_cap=2))
    outcomes = clock.run_together(*[lambda i=i: router.route(f"req-{i}", clock) for i in range(5)])
    assert [o.status for o in outcomes] == ["served", "served", "refused", "refused", "refused"]
    for outcome in outcomes[2:]:
        assert outcome.errors == {RouteError.TRANSIENT: 3, RouteError.AT_CAPACITY: 1}
        assert isinstance(outcome.error, GroupAtCapacity) and outcome.error.transient
        assert (outcome.error.group, outcome.error.limit, outcome.group) == ("agent-overflow", 2, "agent-overflow")
    assert router.route("req-5", clock).delivered  # the places were given back


def test_without_a_limit_the_fallback_takes_the_whole_wave(clock):
    router = Router(primary_outage(overflow_cap=None))
    outcomes = clock.run_together(*[lambda i=i: router.route(f"req-{i}", clock) for i in range(5)])
    assert [o.deployment for o in outcomes] == ["nova"] * 5


def test_a_full_primary_falls_back_or_refuses(clock):
    busy = ModelGroup("primary", (FakeModel(seed=SEED, name="p", latency=QUICK),), max_in_flight=1)
    alone = Router(RouterSettings(groups=(busy, only("spare")), primary="primary"))
    outcomes = clock.run_together(lambda: alone.route("a", clock), lambda: alone.route("b", clock))
    assert [o.status for o in outcomes] == ["served", "refused"]
    assert outcomes[1].attempts == 0
    with_fallback = Router(replace(alone.settings, fallbacks={"primary": "spare"}))
    outcomes = clock.run_together(lambda: with_fallback.route("a", clock), lambda: with_fallback.route("b", clock))
    assert [(o.status, o.deployment) for o in outcomes] == [("served", "p"), ("served", "spare")]
    assert outcomes[1].errors == {RouteError.AT_CAPACITY: 1}


# The router as a model, and the model's new failures.


def test_invoke_answers_or_raises_the_last_model_error(clock):
    router = Router(RouterSettings(groups=(only("down", outage="permanent"), only("up")), primary="down"))
    with pytest.raises(ModelError) as failed:
        router.invoke("t-1", 1, clock)
    assert (failed.value.deployment, failed.value.transient) == ("down", False)
    fallback = Router(replace(router.settings, fallbacks={"down": "up"}))
    assert fallback.invoke("t-1", 1, clock).text == "answer for t-1"


@pytest.mark.parametrize("outage", ["transient", "permanent"])
def test_a_hard_down_deployment_fails_every_call_at_once(clock, outage):
    model = FakeModel(seed=SEED, name="sonnet", outage=outage)
    start = clock.now()
    for attempt in (1, 2, 3):
        with pytest.raises(ModelError, match="deployment sonnet is down") as failed:
            model.invoke(f"t-{attempt}", attempt, clock)
        assert (failed.value.deployment, failed.value.transient) == ("sonnet", outage == "transient")
    assert clock.now() - start < 1


def test_an_unnamed_model_draws_as_it_always_did_and_a_name_salts_the_draws():
    def old_latency(seed, trace_id, attempt):
        digest = hashlib.sha256(f"{seed}|{trace_id}|{attempt}|latency".encode()).digest()
        return LatencyProfile().sample(random.Random(int.from_bytes(digest[:8], "big")))

    unnamed = [FakeModel(seed=3).latency_of(f"t-{i}") for i in range(20)]
    assert unnamed == [old_latency(3, f"t-{i}", 1) for i in range(20)]
    named = [FakeModel(seed=3, name="haiku").latency_of(f"t-{i}") for i in range(20)]
    assert named != unnamed
    assert named != [FakeModel(seed=3, name="sonnet").latency_of(f"t-{i}") for i in range(20)]


# Every bad setting names its field.


def settings(**changes):
    base = dict(groups=(only("a"), only("b")), primary="a", fallbacks={"a": "b"})
    return RouterSettings(**{**base, **changes})


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: settings(num_retries=-1), "num_retries"),
        (lambda: settings(num_retries=11), "num_retries"),
        (lambda: settings(allowed_fails=-1), "allowed_fails"),
        (lambda: settings(cooldown=-0.5), "cooldown"),
        (lambda: settings(groups=()), "groups"),
        (lambda: settings(groups=(only("a"), only("a"))), "groups"),
        (lambda: settings(groups=(only("a"), ModelGroup("b", (FakeModel(name="a"),)))), "groups"),
        (lambda: settings(primary="c"), "primary"),
        (lambda: settings(fallbacks={"a": "c"}), "fallbacks[a]"),
        (lambda: settings(fallbacks={"c": "a"}), "fallbacks[c]"),
        (lambda: settings(fallbacks={"a": "b", "b": "a"}), "fallbacks"),
        (lambda: settings(fallbacks={"a": "a"}), "fallbacks"),
        (lambda: ModelGroup("", (FakeModel(name="x"),)), "name"),
        (lambda: ModelGroup("g", ()), "deployments"),
        (lambda: ModelGroup("g", (FakeModel(),)), "deployments"),
        (lambda: ModelGroup("g", (FakeModel(name="x"), FakeModel(name="x"))), "deployments"),
        (lambda: ModelGroup("g", (FakeModel(name="x"),), max_in_flight=0), "max_in_flight"),
        (lambda: FakeModel(name="x", outage="down"), "outage"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_field(make, field):
    with pytest.raises(InvalidInput) as refused:
        make()
    assert refused.value.field == field


def test_a_callers_attempt_counts_from_one(clock):
    with pytest.raises(InvalidInput) as refused:
        Router(settings()).route("t-1", clock, attempt=0)
    assert refused.value.field == "attempt"


def test_an_outage_window_throttles_only_the_calls_made_inside_it(clock):
    start = clock.now()
    model = FakeModel(seed=SEED, name="m", latency=QUICK, down_from=start + 10, down_until=start + 20)
    model.invoke("t", 1, clock)  # before the window: served
    clock.sleep(10 - (clock.now() - start))
    with pytest.raises(ModelError) as down:
        model.invoke("t", 2, clock)
    assert down.value.transient
    clock.sleep(20 - (clock.now() - start))
    assert model.invoke("t", 3, clock).text == "answer for t"

"""The chaos day: a seeded day of every fault at once holds every invariant on moto and moto-server; the same
seed gives the same scoreboard (moto-server's day: test_chaos_day_server.py); a wrong configuration breaks the
invariant it is wrong for, by exact counts; a day's facts shape its replay and its quota.

Where a count follows from the schedule (its poison, its replay) the test derives it; the others are what this
seed gives, the same on every run of the day (issue 30: a bound would let a change in the day slip by unseen).
Every day runs on the virtual clock, held still (only the day's own waits move it): bounded in time, no sleeps.
"""

import numpy
import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition import Budgets, ChaosSchedule, DayFacts, FleetConfig, Scoreboard, run_chaos_day
from fleetlab.core.errors import InvalidInput
from fleetlab.core.faults import CrashPoint

SEED = 20261202
STEPS = 1_000  # the course's target for a chaos run in the tests
SMALL = 200  # the wrong configurations: enough for their fault to show, at a fifth of the cost
EVERY_POINT = {point.value for point in CrashPoint}


@pytest.fixture(scope="module")
def moto():
    opened = open_backend("moto")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def small_day(moto) -> Scoreboard:
    return run_chaos_day(moto, FleetConfig(), small_schedule())


def small_schedule() -> ChaosSchedule:
    return ChaosSchedule.draw(SEED, SMALL)  # its burst: half the day, 100 steps


def assert_every_invariant_held(board: Scoreboard) -> None:
    schedule, counts = board.schedule, board.counts
    assert [r.name for r in board.invariants if not r.ok] == []
    assert counts.accepted == schedule.steps
    assert counts.lost == 0 and counts.stranded == 0
    assert counts.duplicated == 0
    assert counts.parked == len(schedule.poison) and board.diagnoses == {"ERROR_FROM_TARGET": len(schedule.poison)}
    assert counts.completed == schedule.steps - len(schedule.poison)
    assert counts.hung == 0
    assert counts.traced == schedule.steps
    assert set(board.crashes) == EVERY_POINT  # the day crashed a worker at every named point
    assert counts.replayed > 0 and board.router["fallbacks"] > 0  # the replay ran, the outage was routed around
    assert counts.spend > 0 and board.counts.api_calls_per_step > 0


def test_a_seeded_chaos_day_on_moto_holds_every_invariant(moto):
    board = run_chaos_day(moto, FleetConfig(), ChaosSchedule.draw(SEED, STEPS))
    assert_every_invariant_held(board)
    assert board.broken() == []
    assert board.counts.run_seconds < 120


def test_the_same_seed_gives_the_same_scoreboard(moto, small_day):
    again = run_chaos_day(moto, FleetConfig(), small_schedule())
    assert again.comparable() == small_day.comparable()
    # on moto the day holds the virtual clock still, so every count repeats, the API calls included; the day's
    # length is a difference of two epoch times (each day starts at another instant), equal to float rounding
    assert again.counts.virtual_seconds == pytest.approx(small_day.counts.virtual_seconds, abs=1e-3)
    assert again.counts.slowest_answer == pytest.approx(small_day.counts.slowest_answer, abs=1e-3)
    timed = ("run_seconds", "virtual_seconds", "slowest_answer")
    assert {k: v for k, v in vars(again.counts).items() if k not in timed} == \
        {k: v for k, v in vars(small_day.counts).items() if k not in timed}
    assert again.calls_by_operation == small_day.calls_by_operation
    assert str(again).splitlines()[:14] == str(small_day).splitlines()[:14]  # the schedule, printed with its seed
    assert f"seed {SEED}" in str(small_day)


def test_the_day_keeps_its_series_and_its_traces_for_the_dashboard_and_the_waterfall(small_day):
    samples, counts = small_day.samples, small_day.counts
    assert [sample.at for sample in samples] == sorted(sample.at for sample in samples)
    assert max(sample.replicas for sample in samples) == small_day.replicas_peak
    assert max(sample.waiting for sample in samples) >= small_day.schedule.burst  # the burst, published at once
    assert samples[-1].waiting == 0 and samples[-1].oldest_age == 0
    for point, crashed in small_day.crashes.items():
        assert sum(sample.errors.get(f"crash {point}", 0) for sample in samples) == crashed
    # each poison step is parked once, and once more when the replay brings it back
    replayed_poison = small_day.replayed & small_day.schedule.poison
    assert sum(sample.errors.get("parked", 0) for sample in samples) == counts.parked + len(replayed_poison)
    assert set(small_day.traces) == set(small_day.schedule.trace_ids)
    assert all(hops[0].name == "published" for hops in small_day.traces.values())


def test_the_default_fleet_answers_every_caller_within_the_deadline(small_day):
    answered = small_day.budgets[-1]
    assert answered.name == "time to answer" and answered.ok
    # the slowest caller waits 5 h 9 min: behind the burst, the two-hour outage and the slow step
    assert small_day.counts.slowest_answer == pytest.approx(18_562.101, abs=1e-3)
    assert answered.detail == "slowest 5 h 9 min 22 s (budget 12 h): 0 of 200 answered callers waited longer"


def test_a_twelve_hour_visibility_without_a_heartbeat_answers_crashed_and_poison_steps_days_late(moto):
    schedule = DayFacts(slowest_step_seconds=1_200).schedule(SEED, 20, poison=2)
    loose = Budgets(api_calls_per_step=30.0, dynamodb_writes_per_step=11.0, tokens_per_conversation=10_000.0)
    beating = run_chaos_day(moto, FleetConfig(), schedule, budgets=loose)
    late = run_chaos_day(moto, FleetConfig(heartbeat_seconds=None, visibility_timeout=43_200), schedule, budgets=loose)
    assert beating.broken() == [] and beating.counts.slowest_answer < 2 * 3_600
    # the step that crashed before its effect waits 12 h for its retry; each poison step waits out four
    # timeouts before its last attempt parks it and answers (2 d 1 h): three callers past the 12 h deadline
    assert late.broken() == ["time to answer"]
    crashed = dict((point.value, trace) for point, trace in schedule.crashes)["before_effect"]
    assert late.budgets[-1].detail == ("slowest 2 d 1 h 14 min 33 s (budget 12 h): 3 of 20 answered callers waited "
                                       f"longer: {', '.join(sorted({crashed, *schedule.poison}))}")


def test_a_step_past_the_visibility_timeout_without_a_heartbeat_runs_twice(moto, small_day):
    board = run_chaos_day(moto, FleetConfig(visibility_timeout=500, heartbeat_seconds=None), small_schedule())
    # the slow step (2,700 s) and the held heartbeat step (600 s + its model call) outlive 500 s: a standby
    # replica takes each over, and each takes effect twice; every other invariant holds
    assert board.broken() == ["no duplicate effect"]
    assert board.counts.duplicated == 2 and small_day.counts.duplicated == 0
    assert board.counts.lost == 0 and board.counts.hung == 0


def test_a_fleet_without_idempotency_duplicates_every_crash_after_the_effect_and_every_replay(moto, small_day):
    board = run_chaos_day(moto, FleetConfig(idempotency=False), small_schedule())
    assert board.broken() == ["no duplicate effect"]
    # 21 crashes after the effect and 49 healthy replayed steps run twice (70); 9 more where steps received in a
    # batch ran out their visibility while they waited behind a held step, and the standby replica took them over
    # before the worker that received them first got to them
    assert board.crashes["after_effect_before_delete"] == 21 and len(board.replayed - board.schedule.poison) == 49
    assert board.counts.duplicated == 79
    assert board.counts.lost == 0 and small_day.counts.duplicated == 0


def test_an_idempotency_window_shorter_than_the_day_lets_the_replay_through(moto):
    board = run_chaos_day(moto, FleetConfig(idempotency_window=1_800), small_schedule())
    replayed_healthy = len(board.replayed - board.schedule.poison)
    assert [result.name for result in board.invariants if not result.ok] == ["no duplicate effect"]
    # the replayed steps whose record had expired (done over 30 minutes before the replay) run again; so do
    # steps redelivered after a crash more than 30 minutes after they were first claimed
    assert replayed_healthy == 49
    assert board.counts.duplicated == 65  # of the 49 replayed and 21 crashed after the effect
    assert board.counts.lost == 0


def test_parking_left_to_sqs_parks_the_poison_without_a_diagnosis_and_leaves_its_callers_waiting(moto):
    schedule = small_schedule()
    board = run_chaos_day(moto, FleetConfig(park_with_diagnosis=False), schedule)
    poison = len(schedule.poison)
    assert board.broken() == ["every poison message parked with its diagnosis", "no caller left waiting",
                              "every step on one trace"]
    assert board.counts.parked == poison and board.diagnoses == {"UNKNOWN": poison}
    assert board.counts.hung == poison and board.counts.traced == schedule.steps - poison


def test_without_a_fallback_the_outage_loses_requests(moto):
    board = run_chaos_day(moto, FleetConfig(fallback=False), small_schedule())
    lost = board.invariant("no accepted request lost")
    assert board.broken()[0] == "no accepted request lost" and "no duplicate effect" not in board.broken()
    # the two-hour outage outlasts the five attempts of every step it catches: each is parked with its diagnosis
    assert board.counts.lost == board.counts.stranded == 122
    assert board.counts.parked == board.counts.lost + len(board.schedule.poison)
    assert board.counts.hung == 0
    assert f"{board.counts.lost} of 195 healthy steps" in lost.detail


def test_the_naive_governor_breaks_the_dynamodb_write_budget(moto, small_day):
    board = run_chaos_day(moto, FleetConfig(batch_tokens=1), small_schedule())
    assert board.broken() == ["DynamoDB writes per step"]
    # a draw, a conditional write, for each of the day's model calls: with a batch of one token nothing is left
    # over when a window ends, so the count does not depend on where the windows fall
    assert board.counts.dynamodb_writes == 1_013 and board.counts.completed == 195
    assert board.counts.dynamodb_writes_per_step > Budgets().dynamodb_writes_per_step
    assert small_day.counts.dynamodb_writes_per_step <= Budgets().dynamodb_writes_per_step


@pytest.mark.parametrize(("field", "value"), [
    ("visibility_timeout", 0), ("visibility_timeout", 50_000), ("max_receives", 1), ("max_receives", "4"),
    ("idempotency", "yes"), ("idempotency_window", 600), ("heartbeat_seconds", 900), ("heartbeat_seconds", 0),
    ("min_replicas", -1), ("max_replicas", 0), ("backlog_per_replica", 0), ("primary_deployments", 0),
    ("num_retries", 11), ("allowed_fails", -1), ("cooldown", -5), ("quota_tokens", 0), ("headroom", 1.0),
    ("batch_tokens", 2_000_000),
])
def test_a_bad_config_value_names_its_field(field, value):
    with pytest.raises(InvalidInput) as raised:
        FleetConfig(**{field: value})
    assert raised.value.field == field


@pytest.mark.parametrize("number", [numpy.float64, numpy.int64, float])
def test_whole_floats_and_numpy_numbers_are_kept_as_python_numbers(number):
    config = FleetConfig(idempotency_window=number(388_800), visibility_timeout=number(900),
                         heartbeat_seconds=number(300), quota_window=number(3_600), headroom=numpy.float64(0.1))
    assert config == FleetConfig(idempotency_window=388_800)
    assert [type(getattr(config, name)) for name in ("idempotency_window", "visibility_timeout", "heartbeat_seconds",
                                                     "quota_window", "headroom")] == [int, int, float, float, float]
    facts = DayFacts(quota_tokens=number(6_000), quota_window=number(3_600),
                     budgets=Budgets(api_calls_per_step=number(30), answer_seconds=number(43_200)))
    assert (type(facts.quota_tokens), type(facts.quota_window)) == (int, float)
    assert facts == DayFacts(quota_tokens=6_000, budgets=Budgets(api_calls_per_step=30))
    assert type(facts.budgets.api_calls_per_step) is float


def test_a_whole_number_with_a_fraction_is_refused_with_the_fix():
    with pytest.raises(InvalidInput) as raised:
        FleetConfig(visibility_timeout=numpy.float64(900.5))
    assert raised.value.field == "visibility_timeout"
    assert "must be a whole number, got np.float64(900.5)" in str(raised.value) and "math.ceil" in str(raised.value)
    with pytest.raises(InvalidInput) as raised:
        Budgets(answer_seconds="12 h")
    assert raised.value.field == "answer_seconds"


def test_max_replicas_below_min_replicas_names_max_replicas():
    with pytest.raises(InvalidInput) as raised:
        FleetConfig(min_replicas=5, max_replicas=3)
    assert raised.value.field == "max_replicas"


def test_the_schedule_is_drawn_from_its_seed_alone():
    one, same, other = ChaosSchedule.draw(SEED, STEPS), ChaosSchedule.draw(SEED, STEPS), ChaosSchedule.draw(SEED + 1, STEPS)
    assert one == same and str(one) == str(same)
    assert one != other
    assert len(one.poison) == 5 and one.slow_trace not in one.poison
    assert {point for point, _ in one.crashes} == set(CrashPoint)
    assert one.feeds()[0] == (0, one.chunk) and sum(stop - start for start, stop in one.feeds()) == STEPS
    assert (one.burst_at, one.burst_at + one.burst) in one.feeds()
    assert f"seed {SEED}" in str(one)


@pytest.mark.parametrize(("argument", "value"), [("steps", 5), ("chunk", 0), ("poison", 500), ("burst", 900),
                                                 ("crash_rate", 0.5), ("slow_seconds", 0), ("replay_reach", 60),
                                                 ("provider_quota", (0, 3_600)), ("provider_quota", (1_000, 0)),
                                                 ("provider_quota", 1_000)])
def test_a_bad_schedule_argument_names_itself(argument, value):
    with pytest.raises(InvalidInput) as raised:
        ChaosSchedule.draw(SEED, **({"steps": STEPS} | {argument: value}))
    assert raised.value.field == argument


def test_day_facts_draw_the_day_they_describe():
    facts = DayFacts(slowest_step_seconds=1_200, outage_seconds=3 * 3_600, replay_reach_seconds=3 * 86_400,
                     quota_tokens=10_000, quota_window=1_800)
    schedule = facts.schedule(SEED, 40, poison=2)
    assert (schedule.slow_seconds, schedule.outage_seconds, schedule.replay_reach) == (1_200, 3 * 3_600, 3 * 86_400)
    assert schedule.replay_seconds == 3_600 and schedule.provider_quota == (10_000, 1_800)
    assert len(schedule.poison) == 2 and schedule == facts.schedule(SEED, 40, poison=2)
    assert "10,000 tokens per 1,800 s" in str(schedule)
    assert "once the oldest is 259,200 s old" in str(schedule)


@pytest.mark.parametrize(("field", "value"), [("slowest_step_seconds", 0), ("outage_seconds", -1),
                                              ("replay_reach_seconds", 31 * 86_400), ("quota_window", True),
                                              ("quota_tokens", 0), ("quota_tokens", 1.5), ("budgets", {})])
def test_a_bad_day_fact_names_its_field(field, value):
    with pytest.raises(InvalidInput) as raised:
        DayFacts(**{field: value})
    assert raised.value.field == field


def test_a_replay_three_days_later_runs_again_every_replayed_step_whose_record_has_expired(moto):
    facts = DayFacts(slowest_step_seconds=1_200, replay_reach_seconds=3 * 86_400)
    schedule = facts.schedule(SEED, 20, poison=2)
    expired = run_chaos_day(moto, FleetConfig(), schedule)  # records kept one day
    kept = run_chaos_day(moto, FleetConfig(idempotency_window=3 * 86_400 + 3_600), schedule)
    replayed_healthy = len(expired.replayed - schedule.poison)
    assert expired.counts.virtual_seconds > 3 * 86_400 and replayed_healthy > 0
    assert expired.invariant("no duplicate effect").ok is False
    assert expired.counts.duplicated == replayed_healthy  # each replayed healthy step once more, nothing else
    assert kept.replayed == expired.replayed and kept.counts.duplicated == 0


def test_the_spend_is_held_to_the_providers_quota_not_the_governors(moto):
    facts = DayFacts(slowest_step_seconds=1_200, quota_tokens=6_000, quota_window=3_600)
    schedule = facts.schedule(SEED, 20, poison=2)
    own = run_chaos_day(moto, FleetConfig(), schedule)  # the governor's own quota: a million an hour
    held = run_chaos_day(moto, FleetConfig(quota_tokens=6_000, batch_tokens=1_080), schedule)
    over = own.invariant("spend within the quota")
    assert not over.ok and over.detail.endswith("of 6,000 tokens in a 1 h window, the provider's quota")
    assert held.invariant("spend within the quota").ok

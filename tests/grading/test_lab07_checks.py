"""What lab 07's checks promise beyond their catalogues (``test_catalogues.py`` runs those on moto and
moto-server): stubs say "not yet", a learner's own error is theirs, an answer that is not a FleetConfig is
refused saying what to return, an invalid configuration is reported by its field, the planted day a
repair reads is run once per case, a diagnosis leads with its root cause, quotes what broke and stays short, and
the hidden day of a 1 h 30 min provider window catches a governor left on its own hour whenever it is graded, and a
failed day reports the key of its first cause that names a mistake."""

from dataclasses import replace
from types import SimpleNamespace

import pytest
from fleetlab.backends.backend import open_backend
from fleetlab.composition.chaos import INVARIANTS, ChaosSchedule, Counts, FleetConfig, Result, Scoreboard
from fleetlab.course.checks.lab07.common import judge, run_day
from fleetlab.course.grading import get_check, run_check
from fleetlab.course.grading.results import CheckStatus
from fleetlab_instructor.checks.lab07 import configure as configure_side
from fleetlab_instructor.checks.lab07 import defects as defects_side


def stub_configure(facts): ...


def stub_repair(config, scoreboard):
    raise NotImplementedError


@pytest.mark.parametrize(("check_id", "answer"), [("07.configure", stub_configure), ("07.defects", stub_repair),
                                                  ("07.configure", ...)])
def test_an_unfinished_exercise_says_not_yet(check_id, answer):
    assert run_check(get_check(check_id), answer).status == CheckStatus.NOT_YET


def configure_that_divides_by_zero(facts):
    return FleetConfig(idempotency_window=int(facts.replay_reach_seconds // 0))


def test_a_learners_own_error_is_reported_as_theirs():
    result = run_check(get_check("07.configure"), configure_that_divides_by_zero)
    assert result.status == CheckStatus.FAIL
    assert "your code raised ZeroDivisionError" in result.diagnosis
    assert "configure_that_divides_by_zero" in result.diagnosis


def configure_with_no_visibility(facts):
    return FleetConfig(visibility_timeout=0)


def test_an_invalid_configuration_is_reported_by_its_field():
    result = run_check(get_check("07.configure"), configure_with_no_visibility)
    assert result.status == CheckStatus.FAIL
    assert "your code raised InvalidInput: visibility_timeout: must be within 1..43200" in result.diagnosis


def test_a_configure_that_returns_a_dict_is_refused_saying_what_to_return():
    result = run_check(get_check("07.configure"), lambda facts: {"idempotency_window": 4 * 86_400})
    assert result.status == CheckStatus.FAIL
    assert [case.diagnosis for case in result.cases] == [
        "configure returned dict, not a FleetConfig; build it with FleetConfig(...), e.g. FleetConfig(**knobs) "
        "for a dict of knobs"] * 2


def test_a_repair_reads_the_planted_day_run_once_per_case_and_is_refused_when_not_a_fleet_config():
    check = get_check("07.defects")
    seen = []

    def repair_that_keeps_the_scoreboard(config, scoreboard):
        seen.append(scoreboard)
        return scoreboard

    first, again = (run_check(check, repair_that_keeps_the_scoreboard) for _ in range(2))
    assert first.status == again.status == CheckStatus.FAIL
    assert "repair returned Scoreboard, not a FleetConfig" in first.diagnosis
    planted = check.public[0]
    assert seen[0] is seen[1] and seen[0].config == planted.config  # one planted day, read twice
    assert seen[0].broken()[:2] == ["no duplicate effect", "every poison message parked with its diagnosis"]


def test_a_repair_returned_unchanged_is_told_the_names_of_what_broke_in_quotes():
    result = run_check(get_check("07.defects"), lambda config, scoreboard: config)
    assert result.cases[0].diagnosis == (
        'repair returned the configuration unchanged, and its day broke "no duplicate effect", "every poison '
        'message parked with its diagnosis", "no caller left waiting", "every step on one trace"; change the knobs '
        "behind each")



def board(config: FleetConfig, broken: dict[str, str]) -> Scoreboard:
    """A scoreboard whose results named in ``broken`` broke with those figures, the others held."""
    def results(names):
        return tuple(Result(name, name not in broken, broken.get(name, "")) for name in names)

    counts = Counts(accepted=20, completed=13, lost=5, stranded=5, duplicated=0, parked=7, hung=0, traced=20,
                    spend=20_000, api_calls=400, dynamodb_writes=150, replayed=4, slowest_answer=9_000.0,
                    run_seconds=1.0, virtual_seconds=50_000.0)
    return Scoreboard(schedule=ChaosSchedule.draw(7, 20, poison=2), config=config, invariants=results(INVARIANTS),
                      budgets=results(("API calls per completed step", "DynamoDB writes per step",
                                       "spend per conversation", "time to answer")), counts=counts)


def test_a_budget_broken_beside_an_invariant_is_named_after_the_root_cause_with_no_advice_of_its_own():
    # batches of 10,000 tokens already: the writes per step are high because lost steps shrank the count
    lost = board(FleetConfig(fallback=False), {"no accepted request lost": "5 of 18 healthy steps never took effect",
                                               "API calls per completed step": "30.77 (budget 30)",
                                               "DynamoDB writes per step": "11.54 (budget 11)"})
    diagnosis = judge(lost).diagnosis
    assert diagnosis == (
        'Your configuration broke 3 of the day\'s invariants and budgets. "no accepted request lost" broke '
        "(5 of 18 healthy steps never took effect): the primary group was down for 2 h with no fallback group, so "
        'steps used up their receives; route around the outage to the fallback group; "API calls per completed '
        'step" and "DynamoDB writes per step" broke too: fix the invariants first, as lost, retried and repeated '
        "steps move their figures")
    assert "draw batches" not in diagnosis


def test_invariants_broken_by_one_cause_are_named_together_and_the_cause_said_once():
    silent = board(FleetConfig(park_with_diagnosis=False), {
        "every poison message parked with its diagnosis": "0 of 2 parked with a diagnosis",
        "no caller left waiting": "2 of 20 callers never answered", "every step on one trace": "18 of 20 traces"})
    diagnosis = judge(silent).diagnosis
    assert diagnosis.count("let the last attempt park it with its diagnosis") == 1
    assert ('"every poison message parked with its diagnosis", "no caller left waiting" and "every step on one trace" '
            "broke (0 of 2 parked with a diagnosis; 2 of 20 callers never answered; 18 of 20 traces)") in diagnosis


def test_the_batch_advice_is_given_only_to_a_governor_drawing_less_than_several_calls():
    writes = {"DynamoDB writes per step": "12.00 (budget 11)"}
    assert "draw batches of several calls' tokens" in judge(board(FleetConfig(batch_tokens=500), writes)).diagnosis
    assert "draw batches" not in judge(board(FleetConfig(batch_tokens=10_000), writes)).diagnosis


@pytest.mark.parametrize("side", [configure_side.SIDE, defects_side.SIDE], ids=lambda side: side.check_id)
def test_every_known_wrong_answers_diagnosis_stays_short_and_quotes_what_broke(side):
    check = get_check(side.check_id).with_hidden(side.hidden)
    for wrong in side.wrong_answers:
        for case in run_check(check, wrong.answer, include_hidden=True).cases:
            assert len(case.diagnosis) <= 600, (wrong.name, case.name, case.diagnosis)
            assert ' broke (' not in case.diagnosis or '" broke (' in case.diagnosis, case.diagnosis


def test_a_late_caller_is_told_the_visibility_timeout_it_waited_out_and_the_poison_steps_receives():
    late = {"time to answer": "slowest 2 d 1 h 14 min 33 s (budget 12 h): 3 of 20 answered callers waited longer"}
    twelve_hours = judge(board(FleetConfig(heartbeat_seconds=None, visibility_timeout=43_200), late)).diagnosis
    assert twelve_hours.endswith(
        '"time to answer" broke (slowest 2 d 1 h 14 min 33 s (budget 12 h): 3 of 20 answered callers waited longer): '
        "a crashed step waits out a 12 h visibility timeout before anyone retries it, and a poison step waits out 4 "
        "of them (2 d) before its last attempt answers the caller; keep the timeout near the usual step and beat "
        "while the slow one runs instead")
    many_receives = judge(board(FleetConfig(max_receives=40), late)).diagnosis
    assert "a poison step waits out 38 of them (9 h 30 min)" in many_receives and "the receives few" in many_receives


OWN_HOUR = "the governor at the provider's tokens over its own hour"


@pytest.mark.parametrize("hours_in", [0, 1, 2], ids=["0 min", "60 min", "30 min"])
def test_a_governor_on_its_own_hour_overspends_the_hidden_hour_and_a_half_wherever_its_day_starts(hours_in):
    """A day starts on its governor's window, so the own-hour governor's day starts 0, 60 or 30 minutes into a
    provider window of 1 h 30 min, as the clock falls when it is graded: the hidden day catches it at each."""
    day = next(case for case in configure_side.HIDDEN if case.facts.quota_window == 5_400)
    wrong = next(wrong for wrong in configure_side.WRONG_ANSWERS if wrong.name == OWN_HOUR)
    backend = open_backend("moto")
    try:
        now = backend.clock.now()
        start = (now // 10_800 + 1) * 10_800 + hours_in * 3_600  # 10,800 s: the first time both windows start
        backend.clock.skip(start - 600 - now)  # the clock runs on while the fleet is provisioned; the day then
        # moves on to its next hour: start
        outcome = judge(run_day(SimpleNamespace(backend=backend), day, wrong.answer(day.facts)))
    finally:
        backend.close()
    assert not outcome.ok and wrong.expect in outcome.diagnosis, outcome.diagnosis
    assert '"spend within the quota" broke (peak ' in outcome.diagnosis


OVER_QUOTA = {"spend within the quota": "peak 12,085 of 10,000 tokens in a window, the provider's quota"}


SHORTER = "governor-window-shorter-than-the-providers"


@pytest.mark.parametrize(("mine", "theirs", "windows", "mistake"), [
    (3_600, 5_400, "1 h, the provider 10,000 per 1 h 30 min, and each new 1 h of yours grants them again inside one "
                   "of its windows", SHORTER),
    (60, 3_600, "1 min, the provider 10,000 per 1 h, and each new 1 min of yours grants them again inside one of its "
                "windows", SHORTER),
    (5_400, 3_600, "1 h 30 min, the provider 10,000 per 1 h, whose windows do not nest in your 1 h 30 min ones",
     "governor-window-not-nested-in-the-providers"),
    (7_200, 3_600, "2 h, the provider 10,000 per 1 h", ""),
], ids=["shorter", "a minute", "not a multiple", "a multiple"])
def test_a_spend_over_the_providers_quota_is_told_how_the_governors_window_differs_from_the_providers(
        mine, theirs, windows, mistake):
    over = board(FleetConfig(quota_tokens=10_000, quota_window=mine, batch_tokens=2_000), OVER_QUOTA)
    over = replace(over, schedule=replace(over.schedule, provider_quota=(10_000, theirs)))
    assert judge(over).diagnosis.endswith(
        f"your governor allows 10,000 tokens per {windows}: hold the governor to the provider's quota and window")
    assert judge(over).mistake == mistake


def test_a_governor_allowing_more_tokens_than_the_provider_is_told_its_tokens_alone():
    over = board(FleetConfig(), OVER_QUOTA)  # a million tokens an hour
    over = replace(over, schedule=replace(over.schedule, provider_quota=(10_000, 5_400)))
    assert judge(over).diagnosis.endswith(
        "your governor allows 1,000,000 tokens per 1 h, the provider 10,000 per 1 h 30 min: hold the governor to the "
        "provider's quota and window")
    assert judge(over).mistake == "governor-over-the-provider-tokens"


def test_a_failed_day_reports_the_key_of_its_first_keyed_cause_and_a_budget_that_only_follows_reports_none():
    lost = board(FleetConfig(fallback=False), {"no accepted request lost": "5 of 18 healthy steps never took effect",
                                               "DynamoDB writes per step": "11.54 (budget 11)"})
    assert judge(lost).mistake == "no-fallback-group"
    writes = board(FleetConfig(batch_tokens=500), {"DynamoDB writes per step": "12.00 (budget 11)"})
    assert judge(writes).mistake == ""

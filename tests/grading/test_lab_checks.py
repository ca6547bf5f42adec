"""What the checks of labs 00-02 promise beyond their catalogues: pure checks stay pure,
inputs can tell answers apart, and diagnoses come from what happened."""

import dataclasses

import pytest
from fleetlab_instructor.checks import full_check, side_of

from fleetlab.core.errors import StepFailed
from fleetlab.course.checks.lab01 import visibility
from fleetlab.course.checks.lab02 import consumer, lease
from fleetlab.course.grading import get_check, run_check, runner
from fleetlab.course.grading.results import CheckStatus


@pytest.mark.parametrize("check_id", ["00.planes", "02.window", "05.max_replicas", "05.bill"])
def test_pure_checks_never_open_or_wait_on_a_backend(check_id, monkeypatch):
    monkeypatch.setattr(runner, "open_backend", lambda: pytest.fail(f"{check_id} opened a backend"))
    assert run_check(full_check(check_id), side_of(check_id).reference, include_hidden=True).status == CheckStatus.PASS


def test_window_durations_are_exact_where_rounding_would_make_them_read_alike():
    retention_only = run_check(get_check("02.window"), lambda retry, retention, replay: retention)
    assert retention_only.diagnosis.startswith(
        "a duplicate can arrive up to 4 d 1 h after the first run (1 h of bus retries, 4 d in the queue); "
        "with a 4 d window the record is gone 1 h before then"
    )


def test_a_conservative_window_passes():
    three_times = lambda retry, retention, replay: 3 * (retry + retention + replay)  # noqa: E731
    assert run_check(full_check("02.window"), three_times, include_hidden=True).status == CheckStatus.PASS


def test_a_lease_claim_is_diagnosed_from_the_key_it_found_not_from_the_case():
    never = run_check(get_check("02.lease"), lambda ddb, table, key, owner, now, lease: False)
    first = never.cases[0]
    assert first.name == "the first claim wins, a second waits"
    assert first.diagnosis == "worker-1 claimed alert-7, which nobody held, and got False: a free key must be won"


def test_two_claims_at_once_on_a_live_lease_must_both_wait():
    story = lease.LeaseStory("two claims at once on a live lease",
                             (("claim", "alert-9"), ("wait", 300), ("together", "alert-9")))  # worker-2 and -3
    check = dataclasses.replace(get_check("02.lease"), public=(story,))
    assert run_check(check, side_of("02.lease").reference).status == CheckStatus.PUBLIC_PASS  # both wait

    reference = side_of("02.lease").reference

    def one_says_yes(ddb, table, key, owner, now, lease_seconds):  # worker-3 says it won, and writes nothing
        return reference(ddb, table, key, owner, now, lease_seconds) if owner == "worker-1" else owner == "worker-3"

    verdict = run_check(check, one_says_yes)
    assert verdict.diagnosis == ("worker-3 claimed alert-9 while worker-1's lease had 10 min to run and got True: "
                                 "two workers would run it; the write needs a condition that refuses a live lease")


def test_the_step_times_handed_to_the_learner_are_unsorted_and_the_statement_says_so():
    times = visibility.measured_step_times(get_check("01.visibility").public[0], seed=1)
    assert times != sorted(times)


def test_every_consumer_case_has_alerts_that_share_a_conversation():
    conversations = [conversation for conversation, _ in consumer.INCIDENTS.values()]
    assert len(set(conversations)) < len(conversations)
    assert all(alert not in conversations for alert in consumer.INCIDENTS)


def test_a_heartbeat_at_the_exact_boundary_fails_a_public_case_saying_the_boundary_was_the_problem():
    tie = lambda sqs, url, handle, vis, clock: clock.every(  # noqa: E731
        vis, lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=vis)
    )
    result = run_check(get_check("01.heartbeat"), tie)
    assert result.status == CheckStatus.FAIL
    assert "at the very instant your heartbeat extended it" in result.diagnosis


def test_a_step_that_fails_inside_the_heartbeat_raises_fleetlabs_own_step_failed():
    seen = []

    class Recording:
        def __init__(self, sqs, url, handle, vis, clock):
            extend = lambda: sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=vis)  # noqa: E731
            self.beat = clock.every(vis / 3, extend)

        def __enter__(self):
            self.beat.__enter__()

        def __exit__(self, kind, *error):
            seen.append(kind)
            self.beat.__exit__(kind, *error)

    result = run_check(get_check("01.heartbeat"), Recording)
    assert result.status == CheckStatus.PUBLIC_PASS, result.diagnosis
    assert seen == [None, StepFailed]

"""Lab 03's experiments show what the lab says they show, on moto: each claim the notebook makes
from a run is checked here against the run itself."""

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.backends.fidelity import probe
from fleetlab.composition.topology import new_prefix, provision
from fleetlab.course.experiments import poison
from fleetlab.services.state.responses import ResponseStore


@pytest.fixture(scope="module")
def lab():
    backend = open_backend("moto")
    topology = provision(backend, poison.LAB_SPEC, prefix=new_prefix("t03"))
    yield backend, topology
    assert topology.teardown() == []
    backend.close()


@pytest.fixture
def failures(monkeypatch):
    """The error of every failed attempt the experiments' workers and batch pollers report."""
    seen = []

    class Worker(poison.QueueWorker):
        def poll_once(self, *args, **kwargs):
            outcomes = super().poll_once(*args, **kwargs)
            seen.extend(outcome.error for outcome in outcomes if outcome.status == "failed")
            return outcomes

    class Poller(poison.BatchPoller):
        def poll_once(self):
            outcome = super().poll_once()
            seen.extend([outcome.error] if outcome.error else [])
            return outcome

    monkeypatch.setattr(poison, "QueueWorker", Worker)
    monkeypatch.setattr(poison, "BatchPoller", Poller)
    return seen


def test_a_poison_step_fails_as_invalid_input_naming_the_tool_output(lab, failures):
    backend, topology = lab
    poison.receives_until_parked(backend, topology.queue("researcher"), "conv-71-step-1")
    assert failures and set(failures) == {"InvalidInput: tool output: cannot be parsed"}


def test_the_stuck_fifo_step_fails_as_a_model_error(lab, failures):
    backend, _ = lab
    poison.head_of_line(backend, new_prefix("t03"))
    assert failures and set(failures) == {
        "ModelError: conv-2-step-2: the model rejects this input every time"}


def test_a_handler_that_raises_for_a_failed_record_reports_which_records_failed(lab, failures):
    backend, _ = lab
    poison.batch_of_ten(backend, new_prefix("t03"), failing={"conv-1-step-4": 1}, response="raise")
    assert failures and all(error.startswith("PartlyRefused: 1 record(s) failed") for error in failures)


def test_a_poison_step_is_received_max_receive_count_times_then_found_in_the_dlq(lab):
    backend, topology = lab
    queue = topology.queue("researcher")
    rows = poison.receives_until_parked(backend, queue, "conv-70-step-1")
    assert [row["where"] for row in rows] == ["source queue"] * queue.max_receive_count + ["DLQ"]


@pytest.mark.parametrize(("max_receive_count", "parked"), [(1, 10), (2, 10), (3, 0), (5, 0)])
def test_a_90_second_outage_parks_good_work_only_under_a_small_budget(lab, max_receive_count, parked):
    backend, _ = lab
    run = poison.outage_budget(backend, new_prefix("t03"), max_receive_count=max_receive_count, outage_seconds=90)
    assert (run.done, run.parked) == (10 - parked, parked)
    assert run.ledger.summary().duplicated == 0


@pytest.mark.parametrize(("looks", "ends"), [(0, "provider back: done"), (2, "provider back, but the step is in the DLQ")])
def test_looking_at_a_queue_uses_up_receives(lab, looks, ends):
    backend, topology = lab
    rows = poison.looking_is_receiving(backend, topology.queue("coder"), f"conv-7{looks}-step-1", failures=2, looks=looks)
    assert rows[-1]["what happened"] == ends


def test_the_stale_delete_does_what_the_fidelity_table_says(lab):
    backend, topology = lab
    stale = poison.stale_delete(backend, topology.queue("coder"), "conv-80-step-1")
    assert stale.left_in_queue == probe(backend).get("sqs.stale_receipt_delete").matches_aws


def test_a_stuck_fifo_step_holds_up_its_own_group_and_no_other(lab):
    backend, _ = lab
    lanes = poison.head_of_line(backend, new_prefix("t03"))
    assert lanes.parked_at is not None
    assert all(lanes.done_by(group, lanes.parked_at) == lanes.steps for group in ("conv-1", "conv-3"))
    assert lanes.done_by("conv-2", lanes.parked_at) == 1  # step 1 only: step 2 is stuck at the head
    assert len(lanes.finished["conv-2"]) == lanes.steps - 1 and min(lanes.finished["conv-2"][1:]) > lanes.parked_at


def test_without_partial_responses_the_good_steps_run_again_and_are_parked_with_the_poison(lab):
    backend, _ = lab
    whole = poison.batch_of_ten(backend, new_prefix("t03"), failing={"conv-1-step-4": 99}, response="raise")
    partial = poison.batch_of_ten(backend, new_prefix("t03"), failing={"conv-1-step-4": 99}, response="standard")
    assert (whole.ledger.summary().duplicated, whole.parked) == (18, 10)
    assert (partial.ledger.summary().duplicated, partial.parked, len(partial.ledger.effects())) == (0, 1, 9)


def test_the_fifo_way_never_runs_a_step_after_an_earlier_one_failed_in_its_batch(lab):
    backend, _ = lab
    for response, broken in (("standard", True), ("fifo", False)):
        run = poison.batch_of_ten(backend, new_prefix("t03"), failing={"conv-1-step-4": 1}, response=response,
                                  fifo=True)
        first = run.invocations[0]
        assert ("5" in first["ran"]) is broken
        assert sorted(run.order, key=int) == [str(n) for n in range(1, 11)]  # each step once


def test_fleetlab_and_powertools_report_the_same_records(lab):
    backend, _ = lab
    assert all(row["same response"] for row in poison.beside_powertools(backend, new_prefix("t03")))


def test_only_the_worker_with_an_attempt_budget_answers_the_caller(lab):
    backend, topology = lab
    responses = ResponseStore(backend.client("dynamodb"), topology.table_name, backend.clock)
    unanswered, answered = poison.callers(backend, topology, responses)
    assert unanswered["written on receive"] == "-" and unanswered["the caller got"].startswith("nothing")
    assert answered["written on receive"] == topology.queue("researcher").max_receive_count - 1
    assert answered["the caller got"] == "a graceful error (ERROR_FROM_TARGET)"


def test_a_self_paced_poller_never_long_polls_on_a_real_clock(real_clock_backend):
    waits: list[int] = []  # each ReceiveMessage's WaitTimeSeconds
    real_clock_backend.client("sqs").meta.events.register(
        "provide-client-params.sqs.ReceiveMessage", lambda params, **_: waits.append(params.get("WaitTimeSeconds")))
    run = poison.outage_budget(real_clock_backend, new_prefix("03"), max_receive_count=3, outage_seconds=90, steps=3)
    assert (run.done, run.parked) == (3, 0)  # two throttled receives, the third after the outage succeeds
    assert waits and set(waits) == {0}  # its poll interval paces it: a long poll would be a lab minute at x60

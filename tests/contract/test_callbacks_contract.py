"""The token loop and its failure modes, for real on each backend's Step Functions engine.

Each behaviour is AWS's documented one, or the divergence the backend's
fidelity table declares. Timers are 1 to 6 s: Step Functions runs them in
real time on every backend.
"""

import json

import pytest

from fleetlab.backends.fidelity import probe
from fleetlab.core.errors import AslError
from fleetlab.course.experiments.callback import CallbackBench, Plan, answers, calls, dies, fails
from fleetlab.services.state.claimcheck import ClaimCheck
from fleetlab.services.stepfunctions import asl, callbacks, machines
from fleetlab.services.stepfunctions.worker import DROPPED

pytestmark = pytest.mark.contract

BOTH_NAMES = ["States.HeartbeatTimeout", "States.Timeout"]


@pytest.fixture(scope="module")
def fidelity(backend):
    return probe(backend)


@pytest.fixture
def bench(backend, topology):
    made = CallbackBench(backend, topology.prefix, claimcheck=ClaimCheck(backend.client("s3"), topology.bucket))
    yield made
    made.close()


LOOSE_HEARTBEAT, LOOSE_TIMEOUT = 10, 20
"""Timers for the tests that are not about timers: a loaded machine may take over a second to hand a task to
its worker, and a 1 s heartbeat then fails a task the test expects to succeed (the runs end when the task does)."""


def catch_to_recover(*errors):
    return [{"ErrorEquals": list(errors), "ResultPath": "$.error", "Next": machines.RECOVER_STATE}]


def test_the_worker_answers_on_the_token_and_the_execution_resumes(bench):
    machine = bench.machine("loop", timeout_seconds=LOOSE_TIMEOUT, heartbeat_seconds=LOOSE_HEARTBEAT)
    run = bench.run(machine, answers({"summary": "ok"}, after=0.2))
    assert run.status == "SUCCEEDED"
    assert run.output["result"] == {"summary": "ok"}
    kinds = [row.type for row in run.history]
    assert kinds.index("TaskSubmitted") < kinds.index("TaskSucceeded")
    assert [(c.call, c.accepted) for c in run.calls if c.call != "SendTaskHeartbeat"] == [("SendTaskSuccess", True)]


def test_a_failure_with_an_error_name_is_routed_by_its_catch(bench):
    machine = bench.machine("failure", timeout_seconds=LOOSE_TIMEOUT, heartbeat_seconds=LOOSE_HEARTBEAT, catch=catch_to_recover("AgentFailed"))
    run = bench.run(machine, fails("AgentFailed", "the tool returned nothing"))
    assert run.status == "SUCCEEDED"
    assert run.states == [machines.RUN_STATE, machines.RECOVER_STATE]
    assert run.output["error"]["Error"] == "AgentFailed"


def test_a_dead_worker_times_out_with_timeout_seconds_and_waits_forever_without(bench):
    timed = bench.machine("timed", timeout_seconds=1)
    forever = bench.machine("forever")
    runs = bench.run_together({"timed": Plan(timed, (dies(),)), "forever": Plan(forever, (dies(),))}, wait=2.5)
    assert (runs["timed"].status, runs["timed"].error) == ("FAILED", "States.Timeout")
    assert runs["forever"].status == "RUNNING"
    assert runs["forever"].outcomes == ["died"]


def test_heartbeats_keep_a_long_step_alive_and_silence_ends_it(bench, fidelity):
    machine = bench.machine("beats", timeout_seconds=6, heartbeat_seconds=2)  # 2 s: a loaded machine's hand-off
    runs = bench.run_together({"beats": Plan(machine, (answers(after=3),)),
                               "silent": Plan(machine, (answers(after=3, heartbeat=False),))}, wait=6)
    assert runs["beats"].status == "SUCCEEDED"
    assert sum(c.call == "SendTaskHeartbeat" and c.accepted for c in runs["beats"].calls) >= 3
    assert runs["silent"].status == "FAILED"
    heartbeat_error = "States.Timeout" if fidelity.diverges("stepfunctions.heartbeat_timeout_error") \
        else "States.HeartbeatTimeout"
    assert runs["silent"].error == heartbeat_error
    assert runs["silent"].outcomes == [DROPPED]  # its late answer was refused and dropped, not retried


def test_a_catch_on_both_names_survives_a_missed_heartbeat_and_one_name_only_where_it_is_the_backends(bench, fidelity):
    silent = answers(after=1.5, heartbeat=False)
    both = bench.machine("both", timeout_seconds=3, heartbeat_seconds=1, catch=catch_to_recover(*BOTH_NAMES))
    only = bench.machine("only", timeout_seconds=3, heartbeat_seconds=1,
                         catch=catch_to_recover("States.HeartbeatTimeout"))
    runs = bench.run_together({"both": Plan(both, (silent,)), "only": Plan(only, (silent,))}, wait=3)
    assert runs["both"].states == [machines.RUN_STATE, machines.RECOVER_STATE]
    emulated_name = fidelity.diverges("stepfunctions.heartbeat_timeout_error")
    assert runs["only"].status == ("FAILED" if emulated_name else "SUCCEEDED")


def test_late_callbacks_on_a_timed_out_task_behave_as_declared(bench, fidelity):
    machine = bench.machine("late", timeout_seconds=1)
    run = bench.run(machine, dies(), wait=2.5)
    assert run.status == "FAILED"
    sfn = bench.sfn
    success = callbacks.send_success(sfn, run.tokens[0], {"late": True})
    failure = callbacks.send_failure(sfn, run.tokens[0], "AgentFailed", "late")
    for result, feature in ((success, "stepfunctions.late_task_success"), (failure, "stepfunctions.late_task_failure")):
        finding = fidelity.get(feature)
        observed = "accepted silently" if result.accepted else f"rejected with {result.error_code}"
        assert (observed == "rejected with TaskTimedOut") == finding.matches_aws
        assert finding.matches_aws or observed in finding.observed


def test_a_retry_sends_fresh_work_that_a_live_worker_completes(bench):
    machine = bench.machine("retry", timeout_seconds=6, heartbeat_seconds=2,
                            retry=[{"ErrorEquals": BOTH_NAMES, "IntervalSeconds": 1, "MaxAttempts": 1}])
    run = bench.run(machine, dies(), answers({"attempt": 2}, after=0.1), wait=8)
    assert run.status == "SUCCEEDED"
    assert run.outcomes == ["died", "succeeded"]
    assert [r.detail for r in run.history if r.type == "TaskScheduled"] == ["sqs:sendMessage.waitForTaskToken"] * 2
    assert run.output["result"] == {"attempt": 2}


def test_a_worker_that_beats_between_calls_is_noticed_soon_after_it_dies(bench):
    machine = bench.machine("calls", timeout_seconds=6, heartbeat_seconds=2)
    runs = bench.run_together({"healthy": Plan(machine, (calls(0.8, 0.8, 0.8),)),
                               "dies": Plan(machine, (calls(0.8, 0.8, 0.8, dies_after=1),))}, wait=6)
    assert runs["healthy"].status == "SUCCEEDED"
    assert runs["dies"].status == "FAILED"
    submitted = next(r.at for r in runs["dies"].history if r.type == "TaskSubmitted")
    failed_at = next(r.at for r in runs["dies"].history if r.type == "TaskTimedOut")
    assert 1.8 <= failed_at - submitted <= 4.0  # one HeartbeatSeconds of silence, not the 6 s TimeoutSeconds


def test_an_output_over_256_kib_travels_by_claim_check(bench):
    machine = bench.machine("big", timeout_seconds=LOOSE_TIMEOUT, heartbeat_seconds=LOOSE_HEARTBEAT)
    report = {"report": "x" * 300_000}
    run = bench.run(machine, answers(report))
    assert run.status == "SUCCEEDED"
    reference = run.output["result"]
    assert set(reference) == {"payload_ref"} and reference["payload_ref"]["bytes"] > 262_144
    assert bench.claimcheck.fetch_value(reference) == report


def test_a_learners_asl_as_json_runs_through_the_same_worker(bench):
    learner_json = json.dumps({
        "StartAt": "AskAgent",
        "States": {
            "AskAgent": {"Type": "Task", "Resource": machines.SQS_CALLBACK, "TimeoutSeconds": 3,
                         "HeartbeatSeconds": 1,
                         "Parameters": {"QueueUrl": bench.queue_url, "MessageBody": {"input.$": "$",
                                                                                     "TaskToken.$": "$$.Task.Token"}},
                         "Next": "Finish"},
            "Finish": {"Type": "Succeed"},
        },
    })
    machine = bench.machine("learner", definition=asl.parse_definition(learner_json))
    run = bench.run(machine, answers({"from": "the learner's machine"}, after=0.2))
    assert run.status == "SUCCEEDED"
    assert run.output == {"from": "the learner's machine"}


def test_an_invalid_definition_is_refused_before_anything_is_created(bench, backend):
    definition = machines.callback_definition(bench.queue_url, timeout_seconds=3)
    definition["States"]["RunStep"]["Next"] = "Finish"  # no such state: moto would create it anyway
    sfn = backend.client("stepfunctions")
    before = {m["name"] for m in sfn.list_state_machines()["stateMachines"]}
    with pytest.raises(AslError) as refused:
        bench.machine("broken", definition=definition)
    assert refused.value.field == "States.RunStep.Next"
    assert {m["name"] for m in sfn.list_state_machines()["stateMachines"]} == before


def test_an_answer_that_beats_the_heartbeat_timer_still_ends_the_execution(bench, backend, monkeypatch):
    """moto arms a task's heartbeat timer after sending its message; an answer that lands first is
    missed and the task would time out. Slow the arming so every answer lands first: the bench's one
    follow-up heartbeat must still end the execution."""
    if backend.name not in ("moto", "moto-server"):
        pytest.skip("reproduces a moto race by slowing moto's own code")
    import threading

    from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint

    original = CallbackEndpoint.setup_heartbeat_endpoint
    answered = threading.Event()

    def late_arming(self, heartbeat_seconds):
        answered.wait(timeout=5)
        return original(self, heartbeat_seconds)

    monkeypatch.setattr(CallbackEndpoint, "setup_heartbeat_endpoint", late_arming)
    machine = bench.machine("race", timeout_seconds=3, heartbeat_seconds=2)
    bench.on_call = lambda call: answered.set() if call.call == "SendTaskSuccess" else None
    run = bench.run(machine, answers(after=0.1), wait=4)
    assert run.status == "SUCCEEDED"
    assert run.nudges == 1

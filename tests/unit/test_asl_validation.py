"""ASL validation: what AWS refuses at CreateStateMachine is refused here, naming the state and the field.

Several of these definitions moto creates without a word; the last test proves it, so the
validator is what stands between a learner's typo and a machine that misbehaves at run time.
"""

import json

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.backends.resources import Resources
from fleetlab.core.errors import AslError
from fleetlab.services.stepfunctions import asl, machines

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/tokens"


def callback(**changes):
    definition = machines.callback_definition(QUEUE, timeout_seconds=3, heartbeat_seconds=1)
    definition["States"][machines.RUN_STATE].update(changes)
    return definition


def with_states(**states):
    return {"StartAt": "A", "States": states}


BROKEN = [
    ("a Next that names no state", callback(Next="Finish"), "States.RunStep.Next", "states: Done, RunStep"),
    ("a Next with a typo", callback(Next="Dnoe"), "States.RunStep.Next", "did you mean 'Done'"),
    ("a typo in a field name", callback(HeartBeatSeconds=1), "States.RunStep.HeartBeatSeconds", "HeartbeatSeconds"),
    ("a state nothing leads to",
     with_states(A={"Type": "Pass", "End": True}, B={"Type": "Pass", "End": True}), "States.B", "cannot be reached"),
    ("a callback task that never passes its token",
     callback(Parameters={"QueueUrl": QUEUE, "MessageBody": {"input.$": "$"}}), "States.RunStep.Parameters",
     "$$.Task.Token"),
    ("TimeoutSeconds of zero", callback(TimeoutSeconds=0), "States.RunStep.TimeoutSeconds", "between 1"),
    ("TimeoutSeconds in fractions", callback(TimeoutSeconds=2.5), "States.RunStep.TimeoutSeconds", "whole number"),
    ("a heartbeat window as long as the task", callback(HeartbeatSeconds=3), "States.RunStep.HeartbeatSeconds",
     "smaller than TimeoutSeconds"),
    ("both TimeoutSeconds and TimeoutSecondsPath", callback(TimeoutSecondsPath="$.t"),
     "States.RunStep.TimeoutSecondsPath", "not both"),
    ("a catcher on a missing state", callback(Catch=[{"ErrorEquals": ["States.Timeout"], "Next": "Recovery"}]),
     "States.RunStep.Catch[0].Next", "not a state"),
    ("a catcher without Next", callback(Catch=[{"ErrorEquals": ["States.Timeout"]}]), "States.RunStep.Catch[0].Next",
     "needs a Next"),
    ("ErrorEquals as a string", callback(Retry=[{"ErrorEquals": "States.Timeout"}]),
     "States.RunStep.Retry[0].ErrorEquals", "non-empty list"),
    ("States.ALL beside another name", callback(Retry=[{"ErrorEquals": ["States.ALL", "X"]}]),
     "States.RunStep.Retry[0].ErrorEquals", "alone"),
    ("States.ALL before another retrier", callback(Retry=[{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["X"]}]),
     "States.RunStep.Retry[0].ErrorEquals", "last"),
    ("a backoff below 1", callback(Retry=[{"ErrorEquals": ["X"], "BackoffRate": 0.5}]),
     "States.RunStep.Retry[0].BackoffRate", "at least 1"),
    ("an unknown retrier field", callback(Retry=[{"ErrorEquals": ["X"], "MaxAttempt": 2}]),
     "States.RunStep.Retry[0].MaxAttempt", "MaxAttempts"),
    ("a path field given a plain value",
     callback(Parameters={"QueueUrl": QUEUE, "MessageBody": {"t.$": "$$.Task.Token", "step.$": "seven"}}),
     "States.RunStep.Parameters.MessageBody.step.$", "takes a path"),
    ("a Choice rule without Next",
     with_states(A={"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": True}]}), "States.A.Choices[0]",
     "needs a Next"),
    ("a Wait with two durations", with_states(A={"Type": "Wait", "Seconds": 1, "Timestamp": "x", "End": True}),
     "States.A", "exactly one of Seconds"),
    ("a broken Parallel branch",
     with_states(A={"Type": "Parallel", "End": True, "Branches": [{"StartAt": "B", "States": {"B": {"Type": "Pass"}}}]}),
     "States.A.Branches[0].States.B", "Next or End"),
    ("an unknown top-level field", {**with_states(A={"Type": "Succeed"}), "Timeout": 5}, "definition.Timeout",
     "TimeoutSeconds"),
]


@pytest.mark.parametrize(("definition", "field", "words"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_each_broken_definition_is_refused_naming_the_state_and_field(definition, field, words):
    with pytest.raises(AslError) as refused:
        asl.validate_asl(definition)
    assert refused.value.field == field
    assert words in str(refused.value)


def test_the_lab_machines_are_valid():
    asl.validate_asl(callback(Retry=[{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "MaxAttempts": 1}],
                              Catch=[{"ErrorEquals": ["States.ALL"], "Next": machines.DONE_STATE}]))
    asl.validate_asl(machines.chain_definition(QUEUE, 3, timeout_seconds=3, heartbeat_seconds=1))
    assert machines.RECOVER_STATE in machines.callback_definition(
        QUEUE, catch=[{"ErrorEquals": ["X"], "Next": machines.RECOVER_STATE}])["States"]


def test_an_express_workflow_cannot_wait_for_a_token():
    with pytest.raises(AslError) as refused:
        asl.validate_asl(callback(), workflow_type="EXPRESS")
    assert refused.value.field == "States.RunStep.Resource"


def test_a_definition_given_as_json_text_is_parsed_and_validated():
    assert asl.parse_definition(json.dumps(callback()))["StartAt"] == machines.RUN_STATE
    with pytest.raises(AslError, match="line 1 column 2") as refused:
        asl.parse_definition("{'StartAt': 'A'}")
    assert refused.value.field == "definition"


@pytest.mark.parametrize(("error_equals", "error", "expected"), [
    (["States.Timeout"], "States.Timeout", True),
    (["States.Timeout"], "States.HeartbeatTimeout", True),  # AWS: a missed heartbeat is a States.Timeout too
    (["States.HeartbeatTimeout"], "States.Timeout", False),
    (["States.ALL"], "States.HeartbeatTimeout", True),
    (["States.ALL"], "States.Runtime", False),
    (["States.TaskFailed"], "States.HeartbeatTimeout", True),
    (["States.TaskFailed"], "States.Timeout", False),
])
def test_error_names_match_by_the_asl_rules(error_equals, error, expected):
    assert asl.matches(error_equals, error) is expected


def test_moto_creates_what_aws_refuses_so_fleetlab_validates_first():
    backend = open_backend("moto")
    try:
        sfn = backend.client("stepfunctions")
        role = asl.emulator_role_arn(backend.account_id)
        with Resources(backend, "asl-") as made:
            for number, definition in enumerate([callback(Next="Finish"), with_states(A={"Type": "Pass", "End": True},
                                                                                      B={"Type": "Pass", "End": True}),
                                                 callback(Parameters={"QueueUrl": QUEUE, "MessageBody": {}})]):
                sfn.create_state_machine(name=f"accepted-{number}", definition=json.dumps(definition), roleArn=role)
                with pytest.raises(AslError):
                    machines.create_machine(made, f"refused-{number}", definition, role_arn=role)
            assert made.made() == []
        names = {m["name"] for m in sfn.list_state_machines()["stateMachines"]}
        assert names == {"accepted-0", "accepted-1", "accepted-2"}
    finally:
        backend.close()

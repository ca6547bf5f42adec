"""``04.catch``: the hidden outages, the reference block and both catalogues.

The hidden cases play a worker that never beats and a worker that beats but
outlives TimeoutSeconds, so a block fitted to the public outage alone does
not pass. A Catch on States.Timeout alone is right: AWS's error-name reference
defines States.Timeout as a task past TimeoutSeconds or silent past
HeartbeatSeconds, so it catches a missed heartbeat on AWS as on the emulators.
"""

from __future__ import annotations

import json

from fleetlab.course.checks.lab04.catch import Outage
from fleetlab.course.experiments.callback import answers, dies
from fleetlab_instructor.checks import InstructorSide, RightAnswer, WrongAnswer

HIDDEN = (
    Outage("every worker dies holding the token (no heartbeat)", 3, 1, (dies(),)),
    Outage("a worker that beats but never finishes under TimeoutSeconds 2; the retry's worker dies", 2, 1,
           (answers(after=2.5), dies())),
)

REFERENCE = """{
  "Retry": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"],
             "IntervalSeconds": 1, "MaxAttempts": 1, "BackoffRate": 2.0}],
  "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"],
             "ResultPath": "$.error", "Next": "Recover"}]
}"""

CATCH_ONLY = {"Catch": [{"ErrorEquals": ["States.Timeout", "States.HeartbeatTimeout"], "Next": "Recover"}]}
CATCH_ALL = '{"Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Recover"}]}'
ONE_CATCHER_PER_NAME = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "Next": "Recover"},
                                  {"ErrorEquals": ["States.Timeout"], "Next": "Recover"}]}
ONLY_TIMEOUT_NAME = {"Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Recover"}]}
WHOLE_TASK_STATE = json.dumps({
    "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "HeartbeatSeconds": 1, "TimeoutSeconds": 3,
    "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Recover"}],
})

ONLY_HEARTBEAT_NAME = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "Next": "Recover"}]}
RETRY_WITHOUT_CATCH = {"Retry": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "MaxAttempts": 1,
                                  "IntervalSeconds": 1}]}
TASK_FAILED_WILDCARD = {"Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Recover"}]}
MISNAMED_TARGET = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Recovery"}]}
ERROR_NAME_AS_TEXT = '{"Catch": [{"ErrorEquals": "States.Timeout", "Next": "Recover"}]}'
SLOW_RETRIES = {"Retry": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "IntervalSeconds": 30,
                           "MaxAttempts": 3, "BackoffRate": 2.0}],
                "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Recover"}]}
ALL_BESIDE_OTHERS = {"Catch": [{"ErrorEquals": ["States.ALL", "States.Timeout"], "Next": "Recover"}]}
NOT_JSON = "{'Catch': [{'ErrorEquals': ['States.Timeout'], 'Next': 'Recover'}]}"
TO_THE_SUCCESS_STATE = {"Catch": [{"ErrorEquals": ["States.HeartbeatTimeout", "States.Timeout"], "Next": "Done"}]}

RIGHT_ANSWERS = (
    RightAnswer("a Catch on both names, no Retry", CATCH_ONLY),
    RightAnswer("States.ALL as the only catcher", CATCH_ALL),
    RightAnswer("one catcher per name", ONE_CATCHER_PER_NAME),
    RightAnswer("a whole Task state pasted in", WHOLE_TASK_STATE),
    RightAnswer("the reference as a dict, not JSON text", json.loads(REFERENCE)),
    RightAnswer("catches only States.Timeout (AWS's reference: it covers a missed heartbeat too)", ONLY_TIMEOUT_NAME),
)

WRONG_ANSWERS = (
    WrongAnswer("catches only States.HeartbeatTimeout", ONLY_HEARTBEAT_NAME, "States.Timeout",
                mistake="states-timeout-not-caught"),
    WrongAnswer("retries but never catches", RETRY_WITHOUT_CATCH, "no Catch", mistake="no-catch"),
    WrongAnswer("States.TaskFailed as a wildcard", TASK_FAILED_WILDCARD, "States.Timeout",
                mistake="states-timeout-not-caught"),
    WrongAnswer("routes to a state that does not exist", MISNAMED_TARGET, "not a state",
                mistake="routes-to-no-such-state"),
    WrongAnswer("ErrorEquals as a string", ERROR_NAME_AS_TEXT, "must be a non-empty list",
                mistake="block-step-functions-refuses"),
    WrongAnswer("retries for minutes", SLOW_RETRIES, "keeps the execution waiting", mistake="retries-too-long"),
    WrongAnswer("States.ALL beside another name", ALL_BESIDE_OTHERS, "must appear alone",
                mistake="block-step-functions-refuses"),
    WrongAnswer("Python, not JSON", NOT_JSON, "not valid JSON", mistake="not-json"),
    WrongAnswer("routes the missed heartbeat to the success state", TO_THE_SUCCESS_STATE, "as if the dead worker's step",
                mistake="routes-to-the-success-state"),
)

# The harness sees one mistake where the catalogue lists two: the Catch lets States.Timeout through (a catcher on
# the AWS name alone, or on States.TaskFailed, which never matches it); and Step Functions refusing the block,
# whatever rule of its ErrorEquals the block breaks.
SHARED_MISTAKES = {
    "states-timeout-not-caught": "a Catch that does not cover States.Timeout",
    "block-step-functions-refuses": "an ErrorEquals Step Functions refuses (a list of names, States.ALL alone)",
}

SIDE = InstructorSide("04.catch", hidden=HIDDEN, reference=REFERENCE,
                      right_answers=RIGHT_ANSWERS, wrong_answers=WRONG_ANSWERS, shared_mistakes=SHARED_MISTAKES)

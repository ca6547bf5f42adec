"""moto's Step Functions interpreter, imported when a lab first needs it (issue 41).

With state-machine execution on, moto serves every Step Functions call from
its interpreter's backend (``moto.stepfunctions.parser.models``), whose
import also imports moto's EC2 and Batch models: about 1.5 s of a lab's
first cell, though most labs only create the orchestrator state machine and
never run it. While ``install()`` is in force, moto's plain Step Functions
backend answers the calls that need no interpreter (``PLAIN_ACTIONS``); the
first other call imports the interpreter, which adopts every state machine
made so far (validating each definition as moto's create would have) and
answers from then on, as moto does without this module.

A definition moto's create validates with the interpreter is created on the
plain backend only when fleetlab made it itself (``vouch``): the
orchestrator, whose definition the interpreter accepts in every lab that runs
it. Anything else, a learner's definition above all, imports the interpreter
first and is validated when it is created, as before.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

INTERPRETER = "moto.stepfunctions.parser.models"
PLAIN_ACTIONS = frozenset({
    "DeleteStateMachine", "DescribeStateMachine", "ListStateMachines",
    "ListTagsForResource", "TagResource", "UntagResource",
})
"""Calls moto's plain backend answers exactly as its interpreter's does (the interpreter inherits them)."""

_vouched: set[str] = set()


def vouch(definition: str) -> None:
    """Let moto's plain backend create a state machine with ``definition``: fleetlab built it, the interpreter accepts it."""
    _vouched.add(definition)


def install() -> Callable[[], None]:
    """Serve Step Functions from moto's plain backend until a call needs the interpreter; returns the undo.

    Nothing is deferred when the interpreter is already imported (a warm kernel preloads it) or
    when another backend's deferral is still in force.
    """
    from moto.stepfunctions import responses

    prop = vars(responses.StepFunctionResponse)["stepfunction_backend"]
    if INTERPRETER in sys.modules or getattr(prop.fget, "_fleetlab_lazy", False):
        return lambda: None
    switched = threading.Event()
    lock = threading.Lock()

    def stepfunction_backend(response: Any) -> Any:
        if not switched.is_set() and _execution_on() and not _plain_will_do(response):
            with lock:
                if not switched.is_set():
                    _adopt_into_interpreter()
                    switched.set()
        if switched.is_set() or not _execution_on():
            return prop.fget(response)
        return responses.stepfunctions_backends[response.current_account][response.region]

    stepfunction_backend._fleetlab_lazy = True  # type: ignore[attr-defined]
    responses.StepFunctionResponse.stepfunction_backend = property(stepfunction_backend)

    def uninstall() -> None:
        responses.StepFunctionResponse.stepfunction_backend = prop

    return uninstall


def _execution_on() -> bool:
    from moto.core.config import default_user_config

    return bool(default_user_config.get("stepfunctions", {}).get("execute_state_machine", False))


def _plain_will_do(response: Any) -> bool:
    """True when moto's plain backend answers ``response``'s call as the interpreter's would."""
    action = response._get_action()
    if action == "CreateStateMachine":
        return response._get_param("definition") in _vouched and not response._get_param("publish")
    return action in PLAIN_ACTIONS


def _adopt_into_interpreter() -> None:
    """Import the interpreter and move each plain backend's state machines into its backend, validating each."""
    from moto.stepfunctions.models import stepfunctions_backends
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    for account_id, regions in list(stepfunctions_backends.items()):
        for region, plain in list(regions.items()):
            if not plain.state_machines and not plain.activities:
                continue
            for machine in plain.state_machines:
                stepfunctions_parser_backends[account_id][region]._validate_definition(definition=machine.definition)
            interpreter = stepfunctions_parser_backends[account_id][region]
            interpreter.__dict__.update(plain.__dict__)
            for machine in interpreter.state_machines:
                machine.backend = interpreter
            plain.reset()

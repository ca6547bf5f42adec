"""moto's Step Functions interpreter is imported only when a lab needs it (``backends.lazysfn``).

Each case runs in a fresh Python process: the interpreter, once imported, stays imported.
"""

import json
import subprocess
import sys
import textwrap

import pytest

INTERPRETER = "moto.stepfunctions.parser.models"


def _run(code: str, tmp_path) -> dict:
    """Run ``code`` (which prints one JSON line last) in a fresh process with its own FLEETLAB_HOME."""
    env_code = f"import os; os.environ['FLEETLAB_HOME'] = {str(tmp_path)!r}; os.environ['FLEETLAB_BACKEND'] = 'moto'\n"
    done = subprocess.run([sys.executable, "-c", env_code + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def warm_home(tmp_path_factory):
    """A FLEETLAB_HOME whose fidelity table is cached, so starting a lab probes nothing."""
    home = tmp_path_factory.mktemp("home")
    _run("""
        import json
        from fleetlab.backends.backend import open_backend
        from fleetlab.backends.fidelity import probe
        backend = open_backend("moto"); probe(backend); backend.close()
        print(json.dumps({}))
    """, home)
    return home


def test_a_lab_that_runs_no_execution_never_imports_the_interpreter_and_one_that_does_gets_it(warm_home):
    seen = _run(f"""
        import json, sys
        import fleetlab
        from fleetlab import Envelope
        lab = fleetlab.start("06", quiet=True)
        sfn = lab.backend.client("stepfunctions")
        machines = [m["name"] for m in sfn.list_state_machines()["stateMachines"]]
        after_start = {INTERPRETER!r} in sys.modules
        arn = lab.fleet.orchestrate(Envelope(trace_id="t-1", conversation_id="c", step=1, agent_class="researcher"))
        status = sfn.describe_execution(executionArn=arn)["status"]
        print(json.dumps({{"after_start": after_start, "machines": machines, "status": status,
                           "after_orchestrate": {INTERPRETER!r} in sys.modules}}))
        lab.close()
    """, warm_home)
    assert seen["after_start"] is False
    assert len(seen["machines"]) == 1 and seen["machines"][0].endswith("orchestrator")
    assert seen["after_orchestrate"] is True
    assert seen["status"] == "RUNNING"  # the orchestrator made before the interpreter came runs in it


def test_a_definition_fleetlab_did_not_build_is_validated_when_it_is_created(tmp_path):
    seen = _run(f"""
        import json, sys
        from fleetlab.backends.backend import open_backend
        backend = open_backend("moto")
        sfn = backend.client("stepfunctions")
        try:
            sfn.create_state_machine(name="bad", definition='{{"StartAt": "Nowhere", "States": {{}}}}',
                                     roleArn="arn:aws:iam::123456789012:role/r")
            refused = ""
        except Exception as exc:  # moto's parser refuses it (as a bare ClientError)
            refused = str(exc)
        print(json.dumps({{"refused": refused, "loaded": {INTERPRETER!r} in sys.modules}}))
        backend.close()
    """, tmp_path)
    assert "ASLParserException" in seen["refused"]
    assert seen["loaded"] is True


def test_nothing_is_deferred_when_the_interpreter_is_already_imported(tmp_path):
    seen = _run(f"""
        import json
        import {INTERPRETER}
        from moto.stepfunctions import responses
        before = vars(responses.StepFunctionResponse)["stepfunction_backend"]
        from fleetlab.backends.backend import open_backend
        backend = open_backend("moto")
        same = vars(responses.StepFunctionResponse)["stepfunction_backend"] is before
        backend.close()
        print(json.dumps({{"same": same}}))
    """, tmp_path)
    assert seen["same"] is True

"""Real AWS, honestly: calls counted on moto, a dated price file, the estimate before the opt-in.

No test here reaches AWS: without the opt-in nothing is opened, and with it the
credentials are taken away (empty config files, no instance metadata), so the
run stops at "could not identify the AWS account".
"""

import json
import os
import re
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest
from fleetlab_tools.callcount import CallCounts, ProcessCalls, count_contract_suite, count_notebook

import fleetlab
from fleetlab.backends.backend import open_backend
from fleetlab.composition import cost
from fleetlab.core.errors import BackendUnavailable, MeasurementFailed, RealAwsRefused
from fleetlab.course import lab as lab_module

REPO = Path(__file__).resolve().parents[1]
LAB_IDS = sorted(path.name[:2] for path in (REPO / "labs" / "solutions").glob("*.ipynb"))
TWO_PASS_STATES = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": True}}}


def rate(service: str, unit_starts: str) -> float:
    """The price file's dollars per unit for ``service`` and the unit that starts with ``unit_starts``."""
    rule = next(r for r in cost.load_prices()["prices"] if r["service"] == service and r["unit"].startswith(unit_starts))
    return rule["usd_per_million"] / 1e6


def test_counting_sees_every_call_item_and_state_transition():
    counting = ProcessCalls().start()
    backend = None
    try:
        backend = open_backend("moto")
        make_counted_calls(backend)
        counts = counting.stop()
        backend.client("sqs").get_queue_url(QueueName="counted")
        assert counting.stop().calls == counts.calls  # a call after stop is not counted
    finally:
        counting.stop()  # botocore is restored even when a call failed
        if backend is not None:
            backend.close()
    calls = {k: v for k, v in counts.calls.items() if k != "sfn.DescribeExecution"}
    assert calls == {"sqs.CreateQueue": 1, "sqs.SendMessage": 3, "eventbridge.PutEvents": 1,
                     "sfn.CreateStateMachine": 1, "sfn.StartExecution": 1, "sfn.DeleteStateMachine": 1}
    assert counts.items == {"eventbridge.PutEvents": 4}
    assert (counts.executions, counts.transitions) == (1, 2)


def counted_notebook(path: Path, *sources: str) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# a lab")]
                                  + [nbformat.v4.new_code_cell(source) for source in sources])
    nbformat.write(nb, path)
    return path


def test_a_notebook_is_counted_in_its_own_kernel_and_left_unchanged(tmp_path):
    path = counted_notebook(tmp_path / "09_counted.ipynb",
                            "from fleetlab.backends.backend import open_backend\nbackend = open_backend('moto')",
                            "sqs = backend.client('sqs')\nurl = sqs.create_queue(QueueName='counted')['QueueUrl']",
                            "for n in range(3):\n    sqs.send_message(QueueUrl=url, MessageBody=str(n))",
                            "backend.close()")
    before = path.read_text()
    counts = count_notebook(path, env={**os.environ, "FLEETLAB_HOME": str(tmp_path / "home")}, timeout=60)
    assert counts.calls == {"sqs.CreateQueue": 1, "sqs.SendMessage": 3}
    assert path.read_text() == before


def test_a_failing_cell_stops_the_count_and_is_named(tmp_path):
    path = counted_notebook(tmp_path / "09_broken.ipynb", "x = 1", "raise ValueError('no queue')")
    with pytest.raises(MeasurementFailed, match=r"09_broken.ipynb: cell 2 stopped the count: ValueError: no queue"):
        count_notebook(path, env={**os.environ, "FLEETLAB_HOME": str(tmp_path / "home")}, timeout=60)


def test_a_contract_suite_that_fails_is_a_failed_measurement_not_a_count(monkeypatch):
    monkeypatch.setenv("FLEETLAB_CONTRACT_BACKENDS", "moto")  # restored afterwards: the count sets it
    ran = []
    monkeypatch.setattr(pytest, "main", lambda args: ran.append(args) or 1)
    with pytest.raises(MeasurementFailed, match=r"the contract suite failed on moto \(pytest exit 1\)"):
        count_contract_suite(REPO)
    assert ran and ran[0][-1] == str(REPO / "tests" / "contract")


def make_counted_calls(backend) -> None:
    """1 CreateQueue, 3 SendMessage, 1 PutEvents of 4 entries, a two-state execution, its state machine deleted."""
    sqs = backend.client("sqs")
    url = sqs.create_queue(QueueName="counted")["QueueUrl"]
    for _ in range(3):
        sqs.send_message(QueueUrl=url, MessageBody="x")
    backend.client("events").put_events(Entries=[{"Source": "s", "DetailType": "d", "Detail": "{}"}] * 4)
    sfn = backend.client("stepfunctions")
    machine = sfn.create_state_machine(name="counted", roleArn="arn:aws:iam::123456789012:role/r",
                                       definition=json.dumps(TWO_PASS_STATES))["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, name="one")["executionArn"]
    _wait_done(sfn, execution)
    sfn.delete_state_machine(stateMachineArn=machine)


def _wait_done(sfn, execution: str) -> None:
    """Poll (bounded) until the execution has left RUNNING."""
    deadline = time.monotonic() + 30
    while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution never finished"
        time.sleep(0.05)  # poll interval; the loop waits on the status


def test_the_estimate_multiplies_counts_by_the_price_file():
    counts = CallCounts(
        calls={"sqs.SendMessage": 2_000_000, "eventbridge.PutEvents": 100_000, "dynamodb.PutItem": 1_000_000,
               "dynamodb.TransactWriteItems": 10, "dynamodb.CreateTable": 1, "sts.GetCallerIdentity": 1,
               "lambda.Invoke": 3},
        items={"eventbridge.PutEvents": 1_000_000, "dynamodb.TransactWriteItems": 20},
        transitions=40_000,
    )
    found = cost.estimate("01", counts=counts)
    by_unit = {(line.service, line.unit): line for line in found.lines}
    expected = (
        2_000_000 * rate("sqs", "requests")
        + 1_000_000 * rate("sqs", "deliveries")
        + 1_000_000 * rate("eventbridge", "custom events")
        + 40_000 * rate("sfn", "state transitions")
        + (1_000_000 + 2 * 20) * rate("dynamodb", "write")
    )
    assert found.total_usd == pytest.approx(expected)
    assert by_unit[("dynamodb", "write request units")].units == 1_000_000 + 40
    assert found.not_billed == 2  # CreateTable, GetCallerIdentity
    assert found.unknown == ("3 x lambda.Invoke",)
    assert "not priced: 3 x lambda.Invoke" in found.text()


def test_the_price_file_is_dated_and_names_its_sources():
    prices = cost.load_prices()
    assert date.fromisoformat(prices["written"]) <= date.today()
    assert "not fetched" in prices["how"]
    for rule in prices["prices"]:
        assert re.match(r"https://(aws\.amazon\.com|docs\.aws\.amazon\.com)/", prices["sources"][rule["service"]])


def test_every_lab_the_demo_and_the_contract_suite_have_counted_calls():
    recorded = cost.load_calls()
    missing = sorted(set(LAB_IDS + ["demo", "contract"]) - set(recorded["subjects"]))
    assert not missing, f"no call counts for {missing}: run `{recorded['generated_by']}` from the repository root"


@pytest.mark.parametrize("subject", LAB_IDS + ["demo", "contract"])
def test_every_call_a_subject_makes_is_priced_or_known_free(subject):
    found = cost.estimate(subject)
    assert found.measured and found.total_usd > 0
    assert not found.unknown, f"add a price (or a not_billed entry) for {found.unknown} to {cost.PRICES_FILE.name}"


def test_a_subject_never_counted_says_so():
    text = cost.estimate("99").text()
    assert "never counted" in text and "python -m fleetlab_tools.callcount" in text


def test_a_lab_on_aws_is_refused_with_its_estimate_before_anything_opens(monkeypatch):
    monkeypatch.delenv("FLEETLAB_ALLOW_REAL_AWS", raising=False)
    opened = []
    monkeypatch.setattr(lab_module, "open_backend", lambda *a, **k: opened.append(a))
    with pytest.raises(RealAwsRefused) as refused:
        fleetlab.start("01", backend="aws")
    message = str(refused.value)
    assert message.startswith("Estimated cost of lab 01 on real AWS")
    assert "FLEETLAB_ALLOW_REAL_AWS=1" in message and "total" in message
    assert opened == []


def test_opted_in_the_estimate_is_printed_before_the_backend_opens(monkeypatch, capsys):
    monkeypatch.setenv("FLEETLAB_ALLOW_REAL_AWS", "1")
    printed_before_opening = []

    def open_instead(*args, **kwargs):
        printed_before_opening.append(capsys.readouterr().out)
        raise BackendUnavailable("stand-in: no account here")

    monkeypatch.setattr(lab_module, "open_backend", open_instead)
    with pytest.raises(BackendUnavailable):
        fleetlab.start("00", backend="aws")
    assert printed_before_opening and "Estimated cost of lab 00" in printed_before_opening[0]


def no_credentials_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without AWS credentials or the opt-in (and no way to find any)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "FLEETLAB_ALLOW_REAL_AWS"}
    env.update(HOME=str(tmp_path), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_EC2_METADATA_DISABLED="true", **extra)
    return env


def test_the_demo_refusal_carries_its_estimate(tmp_path):
    done = subprocess.run([sys.executable, "-m", "fleetlab.cli", "demo"], env=no_credentials_env(tmp_path, FLEETLAB_BACKEND="aws"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "Estimated cost of fleetlab demo" in done.stderr and "FLEETLAB_ALLOW_REAL_AWS=1" in done.stderr


def run_contract_suite(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(REPO / "tests" / "contract")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_the_contract_suite_on_aws_stops_at_the_refusal(tmp_path):
    done = run_contract_suite(no_credentials_env(tmp_path, FLEETLAB_CONTRACT_BACKENDS="aws"))
    assert done.returncode == 2, done.stdout[-2000:]
    assert "Estimated cost of the backend contract suite" in done.stdout
    assert "FLEETLAB_ALLOW_REAL_AWS=1" in done.stdout
    assert not re.search(r"\d+ passed", done.stdout)


def test_the_contract_suite_opted_in_without_credentials_stops_at_the_account(tmp_path):
    done = run_contract_suite(no_credentials_env(tmp_path, FLEETLAB_CONTRACT_BACKENDS="aws", FLEETLAB_ALLOW_REAL_AWS="1"))
    assert done.returncode == 2, done.stdout[-2000:]
    assert "Estimated cost of the backend contract suite" in done.stdout  # printed before opening
    assert "could not identify the AWS account" in done.stdout
    assert not re.search(r"\d+ passed", done.stdout)


def test_fleetlab_cost_prints_an_estimate_without_opening_a_backend(monkeypatch, capsys):
    from fleetlab.cli import main

    monkeypatch.setattr("fleetlab.backends.backend.open_backend", lambda *a, **k: pytest.fail("a backend was opened"))
    assert main(["cost", "02"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Estimated cost of lab 02 on real AWS") and "about $" in out

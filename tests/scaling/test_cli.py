"""``fleetlab keda-size`` and ``fleetlab capacity``: outputs, JSON, and flags that are named when wrong."""

from __future__ import annotations

import json

import pytest

from fleetlab.cli import main


@pytest.fixture
def manifest(tmp_path, manifest_text):
    path = tmp_path / "researcher.yaml"
    path.write_text(manifest_text)
    return path


def test_keda_size_explains_a_reading(manifest, capsys):
    assert main(["keda-size", str(manifest), "--visible", "30", "--in-flight", "25", "--current", "3"]) == 0
    out = capsys.readouterr().out
    assert "researcher-worker: 6 replicas (flags)" in out
    assert "55 = 30 visible + 25 in flight" in out
    assert "active: 55 > activationQueueLength 1" in out
    assert "usage ratio 1.833 outside 0.90-1.10: proposal 6" in out
    assert "\x1b[" not in out  # plain text when stdout is not a terminal


def test_keda_size_json(manifest, capsys):
    assert main(["keda-size", str(manifest), "--visible", "0", "--in-flight", "0", "--delayed", "9",
                 "--current", "5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reading"] == {"source": "flags", "visible": 0, "in_flight": 0, "delayed": 9}
    assert data["metric"] == 0 and data["active"] is False
    assert data["desired"] == 5 and data["settles_at"] == 2  # minReplicaCount 2: never to zero
    assert data["scaled_object"] == "researcher-worker"


def test_keda_size_warns_about_a_setting_keda_ignores(manifest, capsys):
    manifest.write_text(manifest.read_text().replace('activationQueueLength: "1"', 'activationQueueLenght: "1"'))
    assert main(["keda-size", str(manifest), "--visible", "1", "--in-flight", "0"]) == 0
    out = capsys.readouterr().out
    assert "warning:" in out and "did you mean activationQueueLength" in out


@pytest.mark.parametrize("flags, named", [
    (["--visible", "-1", "--in-flight", "0"], "'--visible': must not be negative"),
    (["--visible", "x", "--in-flight", "0"], "'--visible': must be a whole number"),
    (["--visible", "4"], "--in-flight: is required"),
    (["--queue-url", "http://q", "--visible", "4"], "--queue-url: reads the counts live; drop --visible"),
    (["--visible", "4", "--in-flight", "0", "--backend", "moto"], "--backend: is only used with --queue-url"),
])
def test_keda_size_names_a_bad_flag(manifest, capsys, flags, named):
    assert main(["keda-size", str(manifest), *flags]) == 2
    assert named in capsys.readouterr().err


def test_keda_size_names_a_bad_field(manifest, capsys):
    manifest.write_text(manifest.read_text().replace('queueLength: "10"', "queueLength: 10"))
    assert main(["keda-size", str(manifest), "--visible", "1", "--in-flight", "0"]) == 2
    err = capsys.readouterr().err
    assert "spec.triggers[0].metadata.queueLength: must be a string" in err


def test_keda_size_names_every_bad_field_in_one_run(manifest, capsys):
    text = manifest.read_text()
    for right, wrong in (("pollingInterval: 30", "pollingInterval: 0"), ("minReplicaCount: 2", "minReplicaCount: 80"),
                         ('queueLength: "10"', 'queueLength: "ten"')):
        text = text.replace(right, wrong)
    manifest.write_text(text)
    assert main(["keda-size", str(manifest), "--visible", "1", "--in-flight", "0"]) == 2
    err = capsys.readouterr().err
    assert f"fleetlab keda-size: {manifest} has 3 problems:" in err
    assert "\n  spec.minReplicaCount: 80 is above maxReplicaCount 60\n" in err
    assert "\n  spec.pollingInterval: must be at least 1, got 0\n" in err
    assert "\n  spec.triggers[0].metadata.queueLength: must be a whole number in a string, got 'ten'\n" in err


def test_keda_size_reads_the_queue_live(manifest, capsys, real_clock_backend):
    sqs = real_clock_backend.client("sqs")
    url = sqs.create_queue(QueueName="live-reading", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    for n in range(7):
        sqs.send_message(QueueUrl=url, MessageBody=f"doc {n}")
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)
    assert main(["keda-size", str(manifest), "--queue-url", url, "--backend", "localstack", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reading"] == {"source": f"live from {url}", "visible": 5, "in_flight": 2, "delayed": 0}
    assert data["metric"] == 7 and data["desired"] == 2  # ceil(7 / 10) = 1, held up by minReplicaCount 2


def test_keda_size_says_when_the_queue_cannot_be_read(manifest, capsys, real_clock_backend):
    missing = real_clock_backend.endpoint + "/000000000000/no-such-queue"
    assert main(["keda-size", str(manifest), "--queue-url", missing, "--backend", "localstack"]) == 2
    assert "--queue-url: could not read" in capsys.readouterr().err


def test_capacity_prints_the_worked_fleet(capsys):
    assert main(["capacity", "--conversations-per-minute", "500", "--steps", "15", "--step-seconds", "90"]) == 0
    out = capsys.readouterr().out
    for figure in ("7,500 per minute", "21,600,000", "1,080,000", "10,800,000", "11,250 = 9.4%",
                   "25% of 500/s"):
        assert figure in out
    assert "\x1b[" not in out


def test_capacity_json(capsys):
    assert main(["capacity", "--conversations-per-minute", "50", "--steps", "4", "--step-seconds", "30",
                 "--region", "ap-south-1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["steps_per_second"] == pytest.approx(50 * 4 / 60)
    assert data["in_flight_steps"] == pytest.approx(100)
    assert data["callback_refill_per_second"] == 300


@pytest.mark.parametrize("flags, named", [
    (["--conversations-per-minute", "0", "--steps", "15", "--step-seconds", "90"],
     "'--conversations-per-minute': must be a positive, finite number"),
    (["--conversations-per-minute", "ten", "--steps", "15", "--step-seconds", "90"],
     "'--conversations-per-minute': must be a number"),
    (["--conversations-per-minute", "5", "--steps", "0", "--step-seconds", "90"], "'--steps': must be at least 1"),
    (["--conversations-per-minute", "5", "--steps", "3"], "Missing option '--step-seconds'"),
])
def test_capacity_names_a_bad_flag(capsys, flags, named):
    assert main(["capacity", *flags]) == 2
    assert named in capsys.readouterr().err

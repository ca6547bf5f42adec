"""A DLQ the pipeline parked can be triaged with the plain AWS CLI, as an on-call engineer would:
``aws sqs receive-message --message-attribute-names All`` shows each record's failure class."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fleetlab.backends.backend import open_backend
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.services.sqs import dlq

AWS = Path(sys.executable).with_name("aws")  # AWS CLI v1, pinned in the test extra


@pytest.fixture
def server():
    backend = open_backend("moto-server")
    yield backend
    backend.close()


def aws(backend, home, *args):
    environment = {"PATH": os.environ["PATH"], "HOME": str(home), "AWS_ACCESS_KEY_ID": "testing",
                   "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": backend.region,
                   "AWS_CONFIG_FILE": str(home / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(home / "none")}
    done = subprocess.run([str(AWS), "--endpoint-url", backend.endpoint, "--output", "json", *args],
                          env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def test_the_cli_shows_each_parked_records_error_class(server, tmp_path):
    assert AWS.exists(), f"{AWS} is missing: install the test extra (pip install -e '.[test]')"
    with experiment_queue(server, new_prefix("cli"), visibility_timeout=60, max_receive_count=3) as queue:
        target = queue.dead_letter_target("arn:aws:events:us-east-1:123456789012:rule/fl-bus/researcher")
        for n, error in enumerate([ValueError("unparseable"), ValueError("unparseable"), None]):
            diagnosis = target.diagnose(error, attempts=2)
            dlq.dead_letter(server, target, {"MessageId": f"m-{n}", "Body": json.dumps({"trace_id": f"alert-{n}"})},
                            diagnosis)
        seen = aws(server, tmp_path, "sqs", "receive-message", "--queue-url", queue.dlq_url,
                   "--max-number-of-messages", "10", "--message-attribute-names", "All", "--visibility-timeout", "0")
        records = seen["Messages"]
        assert Counter(m["MessageAttributes"]["ERROR_CODE"]["StringValue"] for m in records) == {
            "ERROR_FROM_TARGET": 2, "TIMEOUT": 1}
        first = records[0]["MessageAttributes"]
        assert set(first) == set(dlq.DIAGNOSTIC_ATTRIBUTES)
        assert first["TARGET_ARN"]["StringValue"] == queue.arn
        assert first["RETRY_ATTEMPTS"] == {"StringValue": "1", "DataType": "Number"}

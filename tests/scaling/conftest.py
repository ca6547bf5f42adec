"""Fixtures for the scaling tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def manifest_text() -> str:
    """The seed's worked ScaledObject, with its TriggerAuthentication in front."""
    return """\
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata:
  name: agent-queue-auth
  namespace: agents
spec:
  podIdentity:
    provider: aws
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: researcher-worker
  namespace: agents
spec:
  scaleTargetRef:
    name: researcher-worker
  minReplicaCount: 2
  maxReplicaCount: 60
  pollingInterval: 30
  cooldownPeriod: 300
  triggers:
  - type: aws-sqs-queue
    authenticationRef:
      name: agent-queue-auth
    metadata:
      queueURL: https://sqs.us-east-1.amazonaws.com/111122223333/agent-researcher
      awsRegion: us-east-1
      queueLength: "10"
      activationQueueLength: "1"
"""


@pytest.fixture
def real_clock_backend(monkeypatch):
    """The ``localstack`` backend (real clock, plain boto3 over HTTP) pointed at a moto server on loopback.

    It takes LocalStack's code path, minus LocalStack: for tests that must run on wall time.
    """
    from moto.server import ThreadedMotoServer

    from fleetlab.aws.backends import open_backend

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    monkeypatch.setenv("LOCALSTACK_ENDPOINT", f"http://{host}:{port}")
    for variable in ("FLEETLAB_DYNAMODB_ENDPOINT", "FLEETLAB_S3_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    backend = open_backend("localstack")
    try:
        yield backend
    finally:
        backend.close()
        server.stop()

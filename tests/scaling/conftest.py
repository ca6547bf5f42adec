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

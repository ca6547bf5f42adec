"""ScaledObject manifests: KEDA's defaults, errors that name the field path, and a lossless round trip."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
import yaml

from fleetlab.composition.scaling.manifest import (
    SCHEMA,
    from_manifest,
    load_scaled_object,
    parse_scaled_object,
    save_scaled_object,
    scaled_object,
)
from fleetlab.core.errors import InvalidInput


def test_the_seed_manifest_reads_with_keda_defaults(manifest_text):
    scaled = parse_scaled_object(manifest_text)
    assert (scaled.name, scaled.namespace, scaled.target) == ("researcher-worker", "agents", "researcher-worker")
    assert (scaled.min_replica_count, scaled.max_replica_count, scaled.hpa_min_replicas) == (2, 60, 2)
    trigger = scaled.trigger
    assert (trigger.queue_length, trigger.activation_queue_length) == (10, 1)
    assert trigger.scale_on_in_flight is True and trigger.scale_on_delayed is False  # defaults
    assert trigger.metric_type == "AverageValue" and scaled.behavior is None and scaled.warnings == ()


def test_absent_fields_take_keda_s_defaults():
    bare = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "w"},
            "spec": {"scaleTargetRef": {"name": "w"},
                     "triggers": [{"type": "aws-sqs-queue", "metadata": {"queueURL": "q", "awsRegion": "eu-west-1"}}]}}
    scaled = from_manifest(bare)
    assert (scaled.polling_interval, scaled.cooldown_period, scaled.initial_cooldown_period) == (30, 300, 0)
    assert (scaled.min_replica_count, scaled.max_replica_count, scaled.hpa_min_replicas) == (0, 100, 1)
    assert (scaled.trigger.queue_length, scaled.trigger.activation_queue_length) == (5, 0)
    bare["spec"].update(minReplicaCount=None, maxReplicaCount=None)  # a null is pruned, as the API server does
    assert from_manifest(bare) == scaled


def edit(text: str, change) -> str:
    docs = list(yaml.safe_load_all(text))
    change(docs[1])
    return yaml.safe_dump_all(docs)


def trigger(doc):
    return doc["spec"]["triggers"][0]


@pytest.mark.parametrize("change, field, words", [
    (lambda d: trigger(d)["metadata"].update(queueLength="ten"), "spec.triggers[0].metadata.queueLength",
     "whole number"),
    (lambda d: trigger(d)["metadata"].update(queueLength=10), "spec.triggers[0].metadata.queueLength",
     "must be a string"),
    (lambda d: trigger(d)["metadata"].update(queueLength="0"), "spec.triggers[0].metadata.queueLength",
     "at least 1"),
    (lambda d: trigger(d)["metadata"].update(scaleOnInFlight="yes"), "spec.triggers[0].metadata.scaleOnInFlight",
     '"true" or "false"'),
    (lambda d: trigger(d)["metadata"].pop("queueURL"), "spec.triggers[0].metadata.queueURL", "required"),
    (lambda d: trigger(d).update(type="rabbitmq"), "spec.triggers[0].type", "'rabbitmq' is not modelled"),
    (lambda d: trigger(d).update(metricType="Utilization"), "spec.triggers[0].metricType", "Utilization"),
    (lambda d: d["spec"].update(minReplicaCount=80), "spec.minReplicaCount", "above maxReplicaCount 60"),
    (lambda d: d["spec"].update(maxReplicaCount="60"), "spec.maxReplicaCount", "whole number"),
    (lambda d: d["spec"].update(pollingInterval=0), "spec.pollingInterval", "at least 1"),
    (lambda d: d["spec"].update(minReplicas=2), "spec.minReplicas", "did you mean minReplicaCount"),
    (lambda d: d["spec"].update(idleReplicaCount=2), "spec.idleReplicaCount", "below minReplicaCount"),
    (lambda d: d["spec"].pop("triggers"), "spec.triggers", "one aws-sqs-queue trigger"),
    (lambda d: d["spec"].pop("scaleTargetRef"), "spec.scaleTargetRef", "required"),
    (lambda d: d["metadata"].pop("name"), "metadata.name", "required"),
    (lambda d: d["spec"].update(advanced={"horizontalPodAutoscalerConfig": {"behavior": {
        "scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}}}),
     "spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.policies[0].value", "at least 1"),
    (lambda d: d["spec"].update(advanced={"horizontalPodAutoscalerConfig": {"behavior": {
        "scaleDown": {"stabilizationWindowSeconds": 7200}}}}),
     "spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds", "at most 3600"),
])
def test_a_bad_field_is_named_by_its_path(manifest_text, change, field, words):
    with pytest.raises(InvalidInput) as raised:
        parse_scaled_object(edit(manifest_text, change))
    assert raised.value.field == field
    assert words in str(raised.value)


def test_every_problem_of_a_manifest_is_reported_in_one_error(manifest_text):
    def three_mistakes(doc):
        doc["spec"].update(pollingInterval=0, minReplicaCount=80)  # refused by the schema; above maxReplicaCount 60
        trigger(doc)["metadata"].update(queueLength="ten")  # a string, but not a whole number
    with pytest.raises(InvalidInput) as raised:
        parse_scaled_object(edit(manifest_text, three_mistakes), origin="so.yaml")
    problems = {problem.field: str(problem) for problem in raised.value.problems}
    assert problems == {
        "spec.pollingInterval": "spec.pollingInterval: must be at least 1, got 0",
        "spec.minReplicaCount": "spec.minReplicaCount: 80 is above maxReplicaCount 60",
        "spec.triggers[0].metadata.queueLength":
            "spec.triggers[0].metadata.queueLength: must be a whole number in a string, got 'ten'",
    }
    message = str(raised.value)
    assert message.startswith("so.yaml has 3 problems:\n")
    assert all(f"\n  {line}" in message for line in problems.values())


def test_a_field_the_schema_refused_is_not_compared_again(manifest_text):
    with pytest.raises(InvalidInput) as raised:  # minReplicaCount 2 is not reported as above a refused maximum
        parse_scaled_object(edit(manifest_text, lambda d: d["spec"].update(maxReplicaCount=-24)))
    assert [problem.field for problem in raised.value.problems] == ["spec.maxReplicaCount"]
    assert str(raised.value) == "spec.maxReplicaCount: must be at least 1, got -24"


def test_the_schema_is_a_valid_draft_2020_12_schema_that_names_the_keda_release():
    schema = json.loads(resources.files("fleetlab").joinpath(SCHEMA).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "KEDA v2." in schema["$comment"]


def test_not_yaml_and_no_scaled_object_are_named(tmp_path):
    with pytest.raises(InvalidInput, match="not valid YAML at line 2"):
        parse_scaled_object("kind: ScaledObject\n  spec: [", origin="so.yaml")
    with pytest.raises(InvalidInput, match="no ScaledObject"):
        parse_scaled_object("kind: Deployment\n")
    with pytest.raises(InvalidInput) as raised:
        load_scaled_object(tmp_path / "missing.yaml")
    assert raised.value.field.endswith("missing.yaml")


def test_an_unknown_metadata_key_is_kept_and_warned_about(manifest_text):
    scaled = parse_scaled_object(edit(manifest_text, lambda d: trigger(d)["metadata"].update(queueLenght="50")))
    assert scaled.trigger.queue_length == 10  # KEDA ignores the typo: the queueLength above still rules
    (warning,) = scaled.warnings
    assert "queueLenght" in warning and "did you mean queueLength" in warning


def test_write_then_read_gives_the_same_scaled_object_and_loses_nothing(manifest_text, tmp_path):
    text = edit(manifest_text, lambda d: d["spec"].update(fallback={"failureThreshold": 3, "replicas": 6}))
    scaled = parse_scaled_object(text)
    changed = scaled.with_trigger(queue_length=20).with_spec(max_replica_count=40)
    path = save_scaled_object(changed, tmp_path / "so.yaml")
    again = load_scaled_object(path)
    assert again == changed
    written = yaml.safe_load(path.read_text())
    assert written["spec"]["fallback"] == {"failureThreshold": 3, "replicas": 6}  # not modelled, kept
    assert written["spec"]["triggers"][0]["authenticationRef"] == {"name": "agent-queue-auth"}
    assert written["spec"]["triggers"][0]["metadata"]["queueLength"] == "20"  # a string, as KEDA wants


def test_a_behavior_round_trips():
    text = """
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: w}
spec:
  scaleTargetRef: {name: w}
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleUp: {tolerance: "50m", policies: [{type: Percent, value: 50, periodSeconds: 60}]}
        scaleDown: {stabilizationWindowSeconds: 60, selectPolicy: Min}
  triggers:
  - type: aws-sqs-queue
    metadata: {queueURL: q, awsRegion: us-east-1}
"""
    scaled = parse_scaled_object(text)
    assert scaled.behavior.scale_up.tolerance == 0.05
    assert scaled.behavior.scale_down.select_policy == "Min"
    assert parse_scaled_object(scaled.to_yaml()) == scaled


def test_built_in_code_with_unknown_settings_refused():
    with pytest.raises(InvalidInput) as raised:
        scaled_object("w", "q", queue_lenght=3)
    assert raised.value.field == "queue_lenght"
    with pytest.raises(InvalidInput, match="queueLength"):
        scaled_object("w", "q", queue_length=0)
    with pytest.raises(InvalidInput) as raised:
        scaled_object("w", "q", queue_length=0, min_replica_count=5, max_replica_count=2)
    assert raised.value.field == "spec.minReplicaCount, spec.triggers[0].metadata.queueLength"
    assert str(raised.value).startswith("ScaledObject w has 2 problems:")

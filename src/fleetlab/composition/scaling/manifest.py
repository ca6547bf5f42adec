"""KEDA ScaledObject manifests: read, validate, fill KEDA's defaults, write back.

A ScaledObject is parsed as KEDA and the Kubernetes API server would take it
(KEDA v2.21, ``apis/keda/v1alpha1/scaledobject_types.go`` and the
ScaledObject specification page):

* spec fields are whole numbers: ``pollingInterval`` >= 1 (default 30),
  ``cooldownPeriod`` >= 0 (300), ``initialCooldownPeriod`` >= 0 (0),
  ``minReplicaCount`` >= 0 (0), ``maxReplicaCount`` >= 1 (100), min <= max,
  and ``idleReplicaCount`` (optional) below ``minReplicaCount``;
* trigger metadata is a map of *strings* (Kubernetes rejects a bare number
  there); the aws-sqs-queue scaler reads ``queueLength`` (default "5"),
  ``activationQueueLength`` ("0"), ``scaleOnInFlight`` ("true") and
  ``scaleOnDelayed`` ("false") as KEDA's typed config does: whole numbers as
  JSON integers, booleans as Go's ``strconv.ParseBool``;
* ``advanced.horizontalPodAutoscalerConfig.behavior`` is the HPA's behavior,
  passed through untouched (its defaults are the HPA's, see ``hpa``).

Every problem raises ``InvalidInput`` naming the field path, such as
``spec.triggers[0].metadata.queueLength``. What fleetlab does not model is
kept verbatim, so writing a manifest back loses nothing that was read.
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from fleetlab.core.errors import InvalidInput

API_VERSION = "keda.sh/v1alpha1"
KIND = "ScaledObject"
SQS_TRIGGER = "aws-sqs-queue"

SPEC_FIELDS = {
    "scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod", "idleReplicaCount",
    "minReplicaCount", "maxReplicaCount", "advanced", "triggers", "fallback",
}
TRIGGER_FIELDS = {"type", "name", "metadata", "metricType", "useCachedMetrics", "authenticationRef"}
SQS_METADATA = {
    "queueURL", "queueURLFromEnv", "queueLength", "activationQueueLength", "awsRegion", "awsEndpoint",
    "scaleOnInFlight", "scaleOnDelayed", "identityOwner", "awsRoleArn", "awsAccessKeyID",
    "awsSecretAccessKey", "awsSessionToken",
}
METRIC_TYPES = ("AverageValue", "Value")
POLICY_TYPES = ("Pods", "Percent")
SELECT_POLICIES = ("Max", "Min", "Disabled")
MAX_STABILIZATION_SECONDS = 3600  # the HPA API's bound
MAX_POLICY_PERIOD_SECONDS = 1800

_JSON_INTEGER = re.compile(r"\s*-?(0|[1-9][0-9]*)\s*")
_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


@dataclass(frozen=True)
class SqsTrigger:
    """The aws-sqs-queue trigger, with KEDA's defaults for what the manifest leaves out."""

    queue_url: str
    aws_region: str = ""
    queue_length: int = 5
    activation_queue_length: int = 0
    scale_on_in_flight: bool = True
    scale_on_delayed: bool = False
    metric_type: str = "AverageValue"
    use_cached_metrics: bool = False


@dataclass(frozen=True)
class ScalingPolicy:
    """One HPA scaling policy: at most ``value`` pods (or percent) per ``period_seconds``."""

    type: str
    value: int
    period_seconds: int


@dataclass(frozen=True)
class ScalingRules:
    """One direction of an HPA behavior, as written (None: the HPA's default applies)."""

    stabilization_window_seconds: int | None = None
    select_policy: str | None = None
    policies: tuple[ScalingPolicy, ...] | None = None
    tolerance: float | None = None


@dataclass(frozen=True)
class Behavior:
    """``advanced.horizontalPodAutoscalerConfig.behavior``: the HPA's scale-up and scale-down rules."""

    scale_up: ScalingRules | None = None
    scale_down: ScalingRules | None = None


@dataclass(frozen=True)
class ScaledObject:
    """A ScaledObject with one aws-sqs-queue trigger, KEDA's defaults filled in.

    ``warnings`` lists what KEDA would accept but silently ignore (an
    unknown metadata key, usually a typo). ``source`` is the manifest as
    read, kept so that ``to_manifest`` writes back everything not modelled.
    """

    name: str
    target: str
    trigger: SqsTrigger
    namespace: str = ""
    polling_interval: int = 30
    cooldown_period: int = 300
    initial_cooldown_period: int = 0
    min_replica_count: int = 0
    max_replica_count: int = 100
    idle_replica_count: int | None = None
    behavior: Behavior | None = None
    warnings: tuple[str, ...] = ()
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def hpa_min_replicas(self) -> int:
        """The HPA's minReplicas: ``minReplicaCount`` when above 0, else 1 (KEDA's GetHPAMinReplicas)."""
        return self.min_replica_count if self.min_replica_count > 0 else 1

    def with_trigger(self, **changes: Any) -> ScaledObject:
        """A copy with trigger settings changed (``queue_length=10``), validated again."""
        return validated(replace(self, trigger=replace(self.trigger, **changes)))

    def with_spec(self, **changes: Any) -> ScaledObject:
        """A copy with spec settings changed (``max_replica_count=40``), validated again."""
        return validated(replace(self, **changes))

    def to_manifest(self) -> dict[str, Any]:
        """The manifest as a dict: the source document with every modelled field written explicitly."""
        return _to_manifest(self)

    def to_yaml(self) -> str:
        """The manifest as YAML (PyYAML, block style, keys in manifest order)."""
        return yaml.safe_dump(self.to_manifest(), sort_keys=False, default_flow_style=False)


# --- reading -----------------------------------------------------------------------


def load_scaled_object(path: str | Path) -> ScaledObject:
    """Read a ScaledObject from a YAML file. Raises InvalidInput naming the file or the field."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(str(path), f"cannot be read ({exc.strerror or exc})") from None
    return parse_scaled_object(text, origin=str(path))


def parse_scaled_object(text: str, *, origin: str = "manifest") -> ScaledObject:
    """Parse YAML holding one ScaledObject (other documents, such as a TriggerAuthentication, are skipped)."""
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise InvalidInput(origin, f"is not valid YAML{at}: {getattr(exc, 'problem', exc)}") from None
    scaled = [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") == KIND]
    if not scaled:
        kinds = [doc.get("kind") for doc in documents if isinstance(doc, dict)]
        raise InvalidInput("kind", f"{origin} holds no ScaledObject (kinds found: {kinds or 'none'})")
    if len(scaled) > 1:
        raise InvalidInput("kind", f"{origin} holds {len(scaled)} ScaledObjects; keep one per file")
    return from_manifest(scaled[0])


def from_manifest(document: dict[str, Any]) -> ScaledObject:
    """Build a ScaledObject from a parsed manifest. Raises InvalidInput naming the field path."""
    doc = _mapping(document, "manifest")
    if doc.get("apiVersion") != API_VERSION:
        raise InvalidInput("apiVersion", f"must be {API_VERSION}, got {doc.get('apiVersion')!r}")
    if doc.get("kind") != KIND:
        raise InvalidInput("kind", f"must be {KIND}, got {doc.get('kind')!r}")
    metadata = _mapping(doc.get("metadata"), "metadata")
    name = _required_text(metadata, "name", "metadata.name")
    spec = _mapping(doc.get("spec"), "spec")
    _reject_unknown(spec, SPEC_FIELDS, "spec")
    target_ref = _mapping(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    warnings: list[str] = []
    trigger = _sqs_trigger(spec, warnings)
    scaled = ScaledObject(
        name=name,
        namespace=_optional_text(metadata, "namespace", "metadata.namespace"),
        target=_required_text(target_ref, "name", "spec.scaleTargetRef.name"),
        trigger=trigger,
        polling_interval=_spec_int(spec, "pollingInterval", default=30, minimum=1),
        cooldown_period=_spec_int(spec, "cooldownPeriod", default=300, minimum=0),
        initial_cooldown_period=_spec_int(spec, "initialCooldownPeriod", default=0, minimum=0),
        min_replica_count=_spec_int(spec, "minReplicaCount", default=0, minimum=0),
        max_replica_count=_spec_int(spec, "maxReplicaCount", default=100, minimum=1),
        idle_replica_count=_spec_int(spec, "idleReplicaCount", default=None, minimum=0),
        behavior=_behavior(spec.get("advanced")),
        warnings=tuple(warnings),
        source=copy.deepcopy(doc),
    )
    return validated(scaled)


def validated(scaled: ScaledObject) -> ScaledObject:
    """Check the rules that span fields (KEDA's admission webhook and the HPA API); return it unchanged."""
    if scaled.min_replica_count > scaled.max_replica_count:
        raise InvalidInput(
            "spec.minReplicaCount",
            f"{scaled.min_replica_count} is above maxReplicaCount {scaled.max_replica_count}",
        )
    if scaled.idle_replica_count is not None and scaled.idle_replica_count >= scaled.min_replica_count:
        raise InvalidInput(
            "spec.idleReplicaCount",
            f"{scaled.idle_replica_count} must be below minReplicaCount {scaled.min_replica_count}",
            hint="KEDA only supports idleReplicaCount 0 with a minReplicaCount above it",
        )
    trigger = scaled.trigger
    path = "spec.triggers[0]"
    if trigger.queue_length < 1:
        raise InvalidInput(f"{path}.metadata.queueLength", f"must be at least 1, got {trigger.queue_length}",
                           hint="the HPA refuses a target of 0 messages per pod")
    if trigger.activation_queue_length < 0:
        raise InvalidInput(f"{path}.metadata.activationQueueLength",
                           f"must not be negative, got {trigger.activation_queue_length}")
    if trigger.metric_type not in METRIC_TYPES:
        raise InvalidInput(f"{path}.metricType", f"{trigger.metric_type!r} is not one of {', '.join(METRIC_TYPES)}",
                           hint="the aws-sqs-queue scaler does not support Utilization")
    return scaled


def _sqs_trigger(spec: dict[str, Any], warnings: list[str]) -> SqsTrigger:
    triggers = spec.get("triggers")
    if not isinstance(triggers, list) or not triggers:
        raise InvalidInput("spec.triggers", "needs one aws-sqs-queue trigger (a list with one entry)")
    if len(triggers) > 1:
        raise InvalidInput("spec.triggers", f"has {len(triggers)} triggers; fleetlab models one aws-sqs-queue trigger")
    path = "spec.triggers[0]"
    entry = _mapping(triggers[0], path)
    _reject_unknown(entry, TRIGGER_FIELDS, path)
    kind = entry.get("type")
    if kind != SQS_TRIGGER:
        raise InvalidInput(f"{path}.type", f"{kind!r} is not modelled; fleetlab sizes {SQS_TRIGGER} triggers")
    metadata = _mapping(entry.get("metadata"), f"{path}.metadata")
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise InvalidInput(f"{path}.metadata.{key}", f"must be a string, got {value!r}",
                               hint=f'quote it ({key}: "{value}"); Kubernetes rejects a bare value in trigger metadata')
        if key not in SQS_METADATA:
            close = difflib.get_close_matches(key, sorted(SQS_METADATA), n=1)
            guess = f" (did you mean {close[0]}?)" if close else ""
            warnings.append(f"{path}.metadata.{key} is not an aws-sqs-queue setting; KEDA ignores it{guess}")
    queue_url = metadata.get("queueURL") or metadata.get("queueURLFromEnv") or ""
    if not queue_url.strip():
        raise InvalidInput(f"{path}.metadata.queueURL", "is required (or queueURLFromEnv)")
    region = metadata.get("awsRegion", "")
    if not region.strip() and "authenticationRef" not in entry:
        raise InvalidInput(f"{path}.metadata.awsRegion", "is required (or set it in the TriggerAuthentication)")
    metric_type = entry.get("metricType", "AverageValue")
    if not isinstance(metric_type, str):
        raise InvalidInput(f"{path}.metricType", f"must be a string, got {metric_type!r}")
    cached = entry.get("useCachedMetrics", False)
    if not isinstance(cached, bool):
        raise InvalidInput(f"{path}.useCachedMetrics", f"must be true or false, got {cached!r}")
    return SqsTrigger(
        queue_url=queue_url,
        aws_region=region,
        queue_length=_metadata_int(metadata, "queueLength", path, default=5),
        activation_queue_length=_metadata_int(metadata, "activationQueueLength", path, default=0),
        scale_on_in_flight=_metadata_bool(metadata, "scaleOnInFlight", path, default=True),
        scale_on_delayed=_metadata_bool(metadata, "scaleOnDelayed", path, default=False),
        metric_type=metric_type,
        use_cached_metrics=cached,
    )


def _behavior(advanced: Any) -> Behavior | None:
    if advanced is None:
        return None
    advanced = _mapping(advanced, "spec.advanced")
    if "scalingModifiers" in advanced:
        raise InvalidInput("spec.advanced.scalingModifiers", "is not modelled (it replaces the queue metric by a formula)",
                           hint="remove it to size the plain aws-sqs-queue metric")
    config = advanced.get("horizontalPodAutoscalerConfig")
    if config is None:
        return None
    config = _mapping(config, "spec.advanced.horizontalPodAutoscalerConfig")
    behavior = config.get("behavior")
    if behavior is None:
        return None
    path = "spec.advanced.horizontalPodAutoscalerConfig.behavior"
    behavior = _mapping(behavior, path)
    _reject_unknown(behavior, {"scaleUp", "scaleDown"}, path)
    return Behavior(
        scale_up=_rules(behavior.get("scaleUp"), f"{path}.scaleUp"),
        scale_down=_rules(behavior.get("scaleDown"), f"{path}.scaleDown"),
    )


def _rules(value: Any, path: str) -> ScalingRules | None:
    if value is None:
        return None
    rules = _mapping(value, path)
    _reject_unknown(rules, {"stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"}, path)
    window = _spec_int(rules, "stabilizationWindowSeconds", default=None, minimum=0, path=path,
                       maximum=MAX_STABILIZATION_SECONDS)
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        raise InvalidInput(f"{path}.selectPolicy", f"{select!r} is not one of {', '.join(SELECT_POLICIES)}")
    policies = None
    if "policies" in rules:
        raw = rules["policies"]
        if not isinstance(raw, list) or not raw:
            raise InvalidInput(f"{path}.policies", "must be a non-empty list of policies")
        policies = tuple(_policy(item, f"{path}.policies[{n}]") for n, item in enumerate(raw))
    tolerance = None
    if "tolerance" in rules:
        tolerance = _quantity(rules["tolerance"], f"{path}.tolerance")
    return ScalingRules(window, select, policies, tolerance)


def _policy(value: Any, path: str) -> ScalingPolicy:
    policy = _mapping(value, path)
    _reject_unknown(policy, {"type", "value", "periodSeconds"}, path)
    kind = policy.get("type")
    if kind not in POLICY_TYPES:
        raise InvalidInput(f"{path}.type", f"{kind!r} is not one of {', '.join(POLICY_TYPES)}")
    amount = _spec_int(policy, "value", default=None, minimum=1, path=path)
    period = _spec_int(policy, "periodSeconds", default=None, minimum=1, path=path,
                       maximum=MAX_POLICY_PERIOD_SECONDS)
    if amount is None or period is None:
        missing = "value" if amount is None else "periodSeconds"
        raise InvalidInput(f"{path}.{missing}", "is required")
    return ScalingPolicy(kind, amount, period)


# --- field helpers ------------------------------------------------------------------


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        raise InvalidInput(path, "is required")
    if not isinstance(value, dict):
        raise InvalidInput(path, f"must be a mapping, got {type(value).__name__}")
    return value


def _required_text(mapping: dict[str, Any], key: str, path: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(path, "is required (a non-empty string)")
    return value


def _optional_text(mapping: dict[str, Any], key: str, path: str) -> str:
    value = mapping.get(key, "")
    if not isinstance(value, str):
        raise InvalidInput(path, f"must be a string, got {value!r}")
    return value


def _reject_unknown(mapping: dict[str, Any], known: set[str], path: str) -> None:
    for key in mapping:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(sorted(known))}"
            raise InvalidInput(f"{path}.{key}", "is not a field of this object", hint=hint)


def _spec_int(mapping: dict[str, Any], key: str, *, default: int | None, minimum: int,
              path: str = "spec", maximum: int | None = None) -> Any:
    if key not in mapping or mapping[key] is None:
        return default
    value = mapping[key]
    where = f"{path}.{key}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(where, f"must be a whole number, got {value!r}")
    if value < minimum:
        raise InvalidInput(where, f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidInput(where, f"must be at most {maximum}, got {value}")
    return value


def _metadata_int(metadata: dict[str, str], key: str, path: str, *, default: int) -> int:
    text = metadata.get(key, "")
    if text == "":
        return default
    if not _JSON_INTEGER.fullmatch(text):
        raise InvalidInput(f"{path}.metadata.{key}", f"must be a whole number in a string, got {text!r}")
    return int(text)


def _metadata_bool(metadata: dict[str, str], key: str, path: str, *, default: bool) -> bool:
    text = metadata.get(key, "")
    if text == "":
        return default
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise InvalidInput(f"{path}.metadata.{key}", f"must be \"true\" or \"false\", got {text!r}")


def _quantity(value: Any, path: str) -> float:
    """A Kubernetes quantity such as 0.05, "0.05" or "50m"."""
    if isinstance(value, bool):
        raise InvalidInput(path, f"must be a number, got {value!r}")
    try:
        if isinstance(value, (int, float)):
            number = float(value)
        elif isinstance(value, str) and value.endswith("m"):
            number = int(value[:-1]) / 1000
        else:
            number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(path, f"must be a number such as 0.05 or \"50m\", got {value!r}") from None
    if number < 0:
        raise InvalidInput(path, f"must not be negative, got {value!r}")
    return number


# --- writing ------------------------------------------------------------------------


def save_scaled_object(scaled: ScaledObject, path: str | Path) -> Path:
    """Write ``scaled`` as YAML to ``path``; returns the path."""
    path = Path(path)
    path.write_text(scaled.to_yaml(), encoding="utf-8")
    return path


def _to_manifest(scaled: ScaledObject) -> dict[str, Any]:
    doc = copy.deepcopy(scaled.source)
    doc["apiVersion"] = API_VERSION
    doc["kind"] = KIND
    metadata = doc.setdefault("metadata", {})
    metadata["name"] = scaled.name
    if scaled.namespace:
        metadata["namespace"] = scaled.namespace
    spec = doc.setdefault("spec", {})
    spec.setdefault("scaleTargetRef", {})["name"] = scaled.target
    spec["pollingInterval"] = scaled.polling_interval
    spec["cooldownPeriod"] = scaled.cooldown_period
    if scaled.initial_cooldown_period or "initialCooldownPeriod" in spec:
        spec["initialCooldownPeriod"] = scaled.initial_cooldown_period
    if scaled.idle_replica_count is not None:
        spec["idleReplicaCount"] = scaled.idle_replica_count
    spec["minReplicaCount"] = scaled.min_replica_count
    spec["maxReplicaCount"] = scaled.max_replica_count
    if scaled.behavior is not None:
        config = spec.setdefault("advanced", {}).setdefault("horizontalPodAutoscalerConfig", {})
        config["behavior"] = _behavior_manifest(scaled.behavior)
    triggers = spec.get("triggers") or [{}]
    entry = triggers[0]
    entry["type"] = SQS_TRIGGER
    trigger = scaled.trigger
    if trigger.metric_type != "AverageValue" or "metricType" in entry:
        entry["metricType"] = trigger.metric_type
    if trigger.use_cached_metrics or "useCachedMetrics" in entry:
        entry["useCachedMetrics"] = trigger.use_cached_metrics
    meta = entry.setdefault("metadata", {})
    if "queueURLFromEnv" in meta and "queueURL" not in meta:
        meta["queueURLFromEnv"] = trigger.queue_url
    else:
        meta["queueURL"] = trigger.queue_url
    if trigger.aws_region:
        meta["awsRegion"] = trigger.aws_region
    meta["queueLength"] = str(trigger.queue_length)
    meta["activationQueueLength"] = str(trigger.activation_queue_length)
    meta["scaleOnInFlight"] = "true" if trigger.scale_on_in_flight else "false"
    meta["scaleOnDelayed"] = "true" if trigger.scale_on_delayed else "false"
    spec["triggers"] = [entry, *triggers[1:]]
    return doc


def _behavior_manifest(behavior: Behavior) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, rules in (("scaleUp", behavior.scale_up), ("scaleDown", behavior.scale_down)):
        if rules is None:
            continue
        written: dict[str, Any] = {}
        if rules.stabilization_window_seconds is not None:
            written["stabilizationWindowSeconds"] = rules.stabilization_window_seconds
        if rules.select_policy is not None:
            written["selectPolicy"] = rules.select_policy
        if rules.policies is not None:
            written["policies"] = [
                {"type": p.type, "value": p.value, "periodSeconds": p.period_seconds} for p in rules.policies
            ]
        if rules.tolerance is not None:
            written["tolerance"] = str(rules.tolerance)
        out[key] = written
    return out


def scaled_object(name: str, queue_url: str, *, region: str = "us-east-1", target: str | None = None,
                  **settings: Any) -> ScaledObject:
    """A ScaledObject built in code: ``queue_length=10, max_replica_count=40`` and so on.

    Trigger settings (``queue_length``, ``activation_queue_length``,
    ``scale_on_in_flight``, ``scale_on_delayed``, ``metric_type``,
    ``use_cached_metrics``) and spec settings are told apart by name;
    anything unknown raises InvalidInput naming it.
    """
    trigger_names = set(SqsTrigger.__dataclass_fields__) - {"queue_url", "aws_region"}
    spec_names = set(ScaledObject.__dataclass_fields__) - {"name", "target", "trigger", "namespace", "warnings", "source"}
    trigger_settings = {k: v for k, v in settings.items() if k in trigger_names}
    spec_settings = {k: v for k, v in settings.items() if k in spec_names}
    unknown = set(settings) - trigger_names - spec_names
    if unknown:
        raise InvalidInput(sorted(unknown)[0], "is not a ScaledObject setting",
                           hint=f"known: {', '.join(sorted(trigger_names | spec_names))}")
    trigger = SqsTrigger(queue_url=queue_url, aws_region=region, **trigger_settings)
    return validated(ScaledObject(name=name, target=target or name, trigger=trigger, **spec_settings))

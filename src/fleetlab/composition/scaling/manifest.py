"""KEDA ScaledObject manifests: read, validate, fill KEDA's defaults, write back.

A manifest is checked in one pass and every problem is reported together
(one ``ManifestError``, an ``InvalidInput`` naming each field path, such as
``spec.triggers[0].metadata.queueLength``):

* first against ``fleetlab/schemas/keda-scaledobject-v1alpha1.json``, a JSON
  Schema written after KEDA's ScaledObject CRD (its ``$comment`` names the
  release): field names and types, required fields, minimums (``pollingInterval``
  >= 1, ``maxReplicaCount`` >= 1, ...), trigger metadata as a map of *strings*
  (Kubernetes rejects a bare number there), the HPA behavior's bounds and enums;
  nulls are dropped first, as the API server prunes them;
* then by the checks a schema cannot say, on the fields the schema accepted:
  fleetlab models one aws-sqs-queue trigger and no ``scalingModifiers``; the
  aws-sqs-queue scaler reads ``queueLength`` (default "5"),
  ``activationQueueLength`` ("0"), ``scaleOnInFlight`` ("true") and
  ``scaleOnDelayed`` ("false") as KEDA's typed config does (whole numbers as
  JSON integers, booleans as Go's ``strconv.ParseBool``); a tolerance is a
  quantity ("50m"); ``minReplicaCount`` <= ``maxReplicaCount`` (default 100)
  and ``idleReplicaCount`` below ``minReplicaCount``.

``advanced.horizontalPodAutoscalerConfig.behavior`` is the HPA's behavior,
passed through untouched (its defaults are the HPA's, see ``hpa``). What
fleetlab does not model is kept verbatim, so writing a manifest back loses
nothing that was read.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml

from fleetlab.core.errors import InvalidInput, ManifestError

API_VERSION = "keda.sh/v1alpha1"
KIND = "ScaledObject"
SQS_TRIGGER = "aws-sqs-queue"
SCHEMA = "schemas/keda-scaledobject-v1alpha1.json"  # inside the fleetlab package

SQS_METADATA = {
    "queueURL", "queueURLFromEnv", "queueLength", "activationQueueLength", "awsRegion", "awsEndpoint",
    "scaleOnInFlight", "scaleOnDelayed", "identityOwner", "awsRoleArn", "awsAccessKeyID",
    "awsSecretAccessKey", "awsSessionToken",
}
METRIC_TYPES = ("AverageValue", "Value")  # the aws-sqs-queue scaler's; KEDA also knows Utilization
DEFAULT_MIN_REPLICAS = 0
DEFAULT_MAX_REPLICAS = 100
SPEC_SETTINGS = {
    "pollingInterval": "polling_interval", "cooldownPeriod": "cooldown_period",
    "initialCooldownPeriod": "initial_cooldown_period", "idleReplicaCount": "idle_replica_count",
    "minReplicaCount": "min_replica_count", "maxReplicaCount": "max_replica_count",
}
"""The spec's whole-number settings: manifest key -> ScaledObject attribute."""

_JSON_INTEGER = re.compile(r"\s*-?(0|[1-9][0-9]*)\s*")
_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)")
_QUANTITY_SUFFIXES = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}
_TYPE_WORDS = {"integer": "a whole number", "string": "a string", "object": "a mapping", "array": "a list",
               "boolean": "true or false", "number": "a number"}
_FLEETLAB_HINTS = {"spec.triggers": f"fleetlab sizes one {SQS_TRIGGER} trigger: a list with one entry"}
_T = TypeVar("_T")


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
    min_replica_count: int = DEFAULT_MIN_REPLICAS
    max_replica_count: int = DEFAULT_MAX_REPLICAS
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
    """Read a ScaledObject from a YAML file. Raises InvalidInput naming the file, or ManifestError naming each field."""
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
    return from_manifest(scaled[0], origin=origin)


def from_manifest(document: Any, *, origin: str = "the manifest") -> ScaledObject:
    """Build a ScaledObject from a parsed manifest, KEDA's defaults filled in.

    Raises ManifestError (an InvalidInput) listing every problem of the
    manifest, each named by its field path; ``origin`` names the manifest.
    """
    doc = _without_nulls(document)
    review = _Review(_schema_problems(doc))
    if isinstance(doc, dict) and isinstance(doc.get("spec"), dict):
        review.spec(doc["spec"])
    if review.problems:
        raise ManifestError(sorted(review.problems, key=lambda problem: problem.field), origin=origin)
    return _read(doc, tuple(review.warnings))


def validated(scaled: ScaledObject) -> ScaledObject:
    """Check the rules between fields (KEDA's admission webhook and the HPA API); return it unchanged.

    Raises ManifestError listing every rule broken.
    """
    trigger = scaled.trigger
    problems = [
        *_replica_problems(scaled.min_replica_count, scaled.max_replica_count, scaled.idle_replica_count),
        *_trigger_value_problems(trigger.queue_length, trigger.activation_queue_length, trigger.metric_type),
    ]
    if problems:
        raise ManifestError(problems, origin=f"ScaledObject {scaled.name}")
    return scaled


def _without_nulls(value: Any) -> Any:
    """``value`` with every null field dropped, as the API server prunes them (list items are kept)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _read(doc: dict[str, Any], warnings: tuple[str, ...]) -> ScaledObject:
    """The ScaledObject of a manifest that passed every check; what it leaves out takes KEDA's default."""
    spec = doc["spec"]
    advanced = spec.get("advanced", {})
    behavior = advanced.get("horizontalPodAutoscalerConfig", {}).get("behavior")
    return ScaledObject(
        name=doc["metadata"]["name"],
        namespace=doc["metadata"].get("namespace", ""),
        target=spec["scaleTargetRef"]["name"],
        trigger=_sqs_trigger(spec["triggers"][0]),
        behavior=None if behavior is None else _behavior(behavior),
        warnings=warnings,
        source=doc,
        **{attribute: spec[key] for key, attribute in SPEC_SETTINGS.items() if key in spec},
    )


def _sqs_trigger(entry: dict[str, Any]) -> SqsTrigger:
    metadata, path = entry["metadata"], "spec.triggers[0]"
    return SqsTrigger(
        queue_url=_queue_url(metadata, path),
        aws_region=_region(metadata, "authenticationRef" in entry, path),
        metric_type=entry.get("metricType", "AverageValue"),
        use_cached_metrics=entry.get("useCachedMetrics", False),
        **{attribute: value for key, attribute, parse in _SQS_SETTINGS
           if (value := parse(metadata, key, path)) is not None},
    )


def _behavior(behavior: dict[str, Any]) -> Behavior:
    return Behavior(
        scale_up=_rules(behavior.get("scaleUp")),
        scale_down=_rules(behavior.get("scaleDown")),
    )


def _rules(rules: dict[str, Any] | None) -> ScalingRules | None:
    if rules is None:
        return None
    policies = rules.get("policies")
    tolerance = rules.get("tolerance")
    return ScalingRules(
        stabilization_window_seconds=rules.get("stabilizationWindowSeconds"),
        select_policy=rules.get("selectPolicy"),
        policies=None if policies is None else tuple(
            ScalingPolicy(policy["type"], policy["value"], policy["periodSeconds"]) for policy in policies),
        tolerance=None if tolerance is None else _quantity(tolerance, "tolerance"),
    )


# --- the schema ----------------------------------------------------------------------


@cache
def _schema() -> dict[str, Any]:
    """The ScaledObject JSON Schema (draft 2020-12), read from the package."""
    return json.loads(resources.files("fleetlab").joinpath(SCHEMA).read_text(encoding="utf-8"))


@cache
def _validator() -> Any:
    """A draft 2020-12 validator for the schema whose integers are whole numbers only (2.0 is not one)."""
    import jsonschema  # imported on first use: most ScaledObjects are built in code, and it is slow to import

    base = jsonschema.Draft202012Validator
    whole = base.TYPE_CHECKER.redefine("integer", lambda _, value: type(value) is int)
    return jsonschema.validators.extend(base, type_checker=whole)(_schema())


def _schema_problems(document: Any) -> list[InvalidInput]:
    """Every place ``document`` breaks the schema, each an InvalidInput naming its field path (no repeats)."""
    found: dict[str, InvalidInput] = {}
    for error in _validator().iter_errors(document):
        for problem in _problems_of(error):
            found.setdefault(str(problem), problem)
    return list(found.values())


def _problems_of(error: Any) -> list[InvalidInput]:
    """One jsonschema error as the problems it stands for: each missing or unknown field is its own."""
    where = list(error.absolute_path)
    path = _field(where)
    value, rule, limit, schema = error.instance, error.validator, error.validator_value, error.schema
    if rule == "required":
        missing = [_field([*where, key]) for key in limit if key not in value]
        return [InvalidInput(name, "is required", hint=_FLEETLAB_HINTS.get(name, "")) for name in missing]
    if rule == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        return [InvalidInput(_field([*where, key]), "is not a field of this object", hint=_guess(key, known))
                for key in value if key not in known]
    if rule == "type":
        return [InvalidInput(path, f"must be {_expected(schema)}, got {_shown(value)}", hint=_quote_hint(where, value))]
    return [InvalidInput(path, _problem_text(error), hint=_FLEETLAB_HINTS.get(path, ""))]


def _problem_text(error: Any) -> str:
    """What a value breaks, in words (jsonschema's own message for a rule the schema does not use today)."""
    value, rule, limit = error.instance, error.validator, error.validator_value
    if rule == "minimum":
        return f"must be at least {limit}, got {value}"
    if rule == "maximum":
        return f"must be at most {limit}, got {value}"
    if rule == "enum":
        return f"{value!r} is not one of {', '.join(map(str, limit))}"
    if rule == "const":
        return f"must be {limit}, got {value!r}"
    if rule == "minItems":
        return f"must hold at least {limit} {'entry' if limit == 1 else 'entries'}"
    if rule == "pattern":
        return f"must be {_expected(error.schema)}, got {value!r}"
    return error.message


def _field(where: Iterable[str | int]) -> str:
    """A path such as ``spec.triggers[0].type`` (``manifest`` for the document itself)."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "manifest"


def _expected(schema: dict[str, Any]) -> str:
    """What a field must be, in words: the schema's title, else its type(s)."""
    if "title" in schema:
        return schema["title"]
    kinds = schema.get("type", [])
    return " or ".join(_TYPE_WORDS.get(kind, kind) for kind in ([kinds] if isinstance(kinds, str) else kinds))


def _shown(value: Any) -> str:
    if isinstance(value, dict | list):
        return type(value).__name__
    return repr(value)


def _quote_hint(where: list[str | int], value: Any) -> str:
    """For a bare value in trigger metadata: how to quote it."""
    if len(where) != 5 or where[:2] != ["spec", "triggers"] or where[3] != "metadata" or isinstance(value, dict | list):
        return ""
    written = str(value).lower() if isinstance(value, bool) else value
    return f'quote it ({where[4]}: "{written}"); Kubernetes rejects a bare value in trigger metadata'


def _guess(key: Any, known: list[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1)
    return f"did you mean {close[0]}?" if close else f"known: {', '.join(known)}"


# --- what the schema cannot say ----------------------------------------------------


class _Review:
    """The checks after the schema. Each looks only at fields the schema accepted, so one mistake is named once."""

    def __init__(self, schema_problems: list[InvalidInput]) -> None:
        self.problems = list(schema_problems)
        self.warnings: list[str] = []
        self._refused = {problem.field for problem in schema_problems}

    def accepted(self, path: str) -> bool:
        """Whether the schema found nothing wrong at ``path`` or above it."""
        return not any(path == bad or path.startswith((f"{bad}.", f"{bad}[")) for bad in self._refused)

    def read(self, path: str, reader: Callable[..., _T], *args: Any) -> _T | None:
        """``reader(*args)`` where the schema accepted ``path``; None where it did not, or where the reader refused."""
        if not self.accepted(path):
            return None
        try:
            return reader(*args)
        except InvalidInput as problem:
            self.problems.append(problem)
            return None

    def spec(self, spec: dict[str, Any]) -> None:
        """Check what the schema cannot say about the spec."""
        self._advanced(spec.get("advanced"))
        counts = [spec.get(key, default) if self.accepted(f"spec.{key}") else None for key, default in
                  (("minReplicaCount", DEFAULT_MIN_REPLICAS), ("maxReplicaCount", DEFAULT_MAX_REPLICAS),
                   ("idleReplicaCount", None))]
        self.problems += _replica_problems(*counts)
        self._triggers(spec.get("triggers"))

    def _advanced(self, advanced: Any) -> None:
        if not isinstance(advanced, dict) or not self.accepted("spec.advanced"):
            return
        if "scalingModifiers" in advanced:
            self.problems.append(InvalidInput(
                "spec.advanced.scalingModifiers", "is not modelled (it replaces the queue metric by a formula)",
                hint="remove it to size the plain aws-sqs-queue metric"))
        config = advanced.get("horizontalPodAutoscalerConfig")
        behavior = config.get("behavior") if isinstance(config, dict) else None
        if not isinstance(behavior, dict):
            return
        for direction in ("scaleUp", "scaleDown"):
            rules = behavior.get(direction)
            if isinstance(rules, dict) and "tolerance" in rules:
                where = f"spec.advanced.horizontalPodAutoscalerConfig.behavior.{direction}.tolerance"
                self.read(where, _quantity, rules["tolerance"], where)

    def _triggers(self, triggers: Any) -> None:
        if not isinstance(triggers, list) or not triggers or not self.accepted("spec.triggers"):
            return
        if len(triggers) > 1:
            self.problems.append(InvalidInput(
                "spec.triggers", f"has {len(triggers)} triggers; fleetlab models one {SQS_TRIGGER} trigger"))
            return
        path, entry = "spec.triggers[0]", triggers[0]
        if not isinstance(entry, dict) or not self.accepted(path) or not self.accepted(f"{path}.type"):
            return
        if entry["type"] != SQS_TRIGGER:
            self.problems.append(InvalidInput(
                f"{path}.type", f"{entry['type']!r} is not modelled; fleetlab sizes {SQS_TRIGGER} triggers"))
            return
        metadata = entry.get("metadata")
        if isinstance(metadata, dict) and self.accepted(f"{path}.metadata"):
            self.warnings += _unknown_settings(metadata, path)
            self._sqs(entry, metadata, path)

    def _sqs(self, entry: dict[str, Any], metadata: dict[str, Any], path: str) -> None:
        """The aws-sqs-queue trigger's settings, each read as the scaler reads its metadata string."""
        if self.accepted(f"{path}.metadata.queueURLFromEnv"):
            self.read(f"{path}.metadata.queueURL", _queue_url, metadata, path)
        self.read(f"{path}.metadata.awsRegion", _region, metadata, "authenticationRef" in entry, path)
        values = {attribute: self.read(f"{path}.metadata.{key}", parse, metadata, key, path)
                  for key, attribute, parse in _SQS_SETTINGS}
        metric_type = entry.get("metricType") if self.accepted(f"{path}.metricType") else None
        self.problems += _trigger_value_problems(values["queue_length"], values["activation_queue_length"],
                                                 metric_type)


def _replica_problems(minimum: int | None, maximum: int | None, idle: int | None) -> list[InvalidInput]:
    """KEDA's rules between the replica counts (None: unset, or refused already, so not compared)."""
    problems = []
    if minimum is not None and maximum is not None and minimum > maximum:
        problems.append(InvalidInput("spec.minReplicaCount", f"{minimum} is above maxReplicaCount {maximum}"))
    if idle is not None and minimum is not None and idle >= minimum:
        problems.append(InvalidInput(
            "spec.idleReplicaCount", f"{idle} must be below minReplicaCount {minimum}",
            hint="KEDA only supports idleReplicaCount 0 with a minReplicaCount above it"))
    return problems


def _trigger_value_problems(queue_length: int | None, activation: int | None,
                            metric_type: str | None) -> list[InvalidInput]:
    """The aws-sqs-queue trigger's rules on its values (None: refused already, so not checked)."""
    path = "spec.triggers[0]"
    problems = []
    if queue_length is not None and queue_length < 1:
        problems.append(InvalidInput(f"{path}.metadata.queueLength", f"must be at least 1, got {queue_length}",
                                     hint="the HPA refuses a target of 0 messages per pod"))
    if activation is not None and activation < 0:
        problems.append(InvalidInput(f"{path}.metadata.activationQueueLength",
                                     f"must not be negative, got {activation}"))
    if metric_type is not None and metric_type not in METRIC_TYPES:
        problems.append(InvalidInput(f"{path}.metricType", f"{metric_type!r} is not one of {', '.join(METRIC_TYPES)}",
                                     hint="the aws-sqs-queue scaler does not support Utilization"))
    return problems


def _unknown_settings(metadata: dict[str, Any], path: str) -> list[str]:
    """A warning for each metadata key the aws-sqs-queue scaler does not read (KEDA ignores it; usually a typo)."""
    warnings = []
    for key in metadata:
        if key not in SQS_METADATA:
            close = difflib.get_close_matches(str(key), sorted(SQS_METADATA), n=1)
            guess = f" (did you mean {close[0]}?)" if close else ""
            warnings.append(f"{path}.metadata.{key} is not an aws-sqs-queue setting; KEDA ignores it{guess}")
    return warnings


def _queue_url(metadata: dict[str, str], path: str) -> str:
    queue_url = metadata.get("queueURL") or metadata.get("queueURLFromEnv") or ""
    if not queue_url.strip():
        raise InvalidInput(f"{path}.metadata.queueURL", "is required (or queueURLFromEnv)")
    return queue_url


def _region(metadata: dict[str, str], authenticated: bool, path: str) -> str:
    region = metadata.get("awsRegion", "")
    if not region.strip() and not authenticated:
        raise InvalidInput(f"{path}.metadata.awsRegion", "is required (or set it in the TriggerAuthentication)")
    return region


def _metadata_int(metadata: dict[str, str], key: str, path: str) -> int | None:
    """A whole number as KEDA's typed config reads it from a metadata string; None when unset (KEDA's default)."""
    text = metadata.get(key, "")
    if text == "":
        return None
    if not _JSON_INTEGER.fullmatch(text):
        raise InvalidInput(f"{path}.metadata.{key}", f"must be a whole number in a string, got {text!r}")
    return int(text)


def _metadata_bool(metadata: dict[str, str], key: str, path: str) -> bool | None:
    """A boolean as Go's strconv.ParseBool reads it from a metadata string; None when unset (KEDA's default)."""
    text = metadata.get(key, "")
    if text == "":
        return None
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise InvalidInput(f"{path}.metadata.{key}", f"must be \"true\" or \"false\", got {text!r}")


_SQS_SETTINGS = (
    ("queueLength", "queue_length", _metadata_int),
    ("activationQueueLength", "activation_queue_length", _metadata_int),
    ("scaleOnInFlight", "scale_on_in_flight", _metadata_bool),
    ("scaleOnDelayed", "scale_on_delayed", _metadata_bool),
)
"""The aws-sqs-queue metadata read as values: key, SqsTrigger attribute, how it is read (defaults: SqsTrigger's)."""


def _quantity(value: int | str, path: str) -> float:
    """A Kubernetes quantity whose form the schema accepted (2, "0.05", "50m", "1e-2") as a number, not negative."""
    if isinstance(value, int):
        number = float(value)
    else:
        digits, suffix = _QUANTITY.fullmatch(value).groups()
        if suffix in _QUANTITY_SUFFIXES:
            number = float(digits) * _QUANTITY_SUFFIXES[suffix]
        else:  # a decimal exponent: e3, E-2
            number = float(digits) * 10 ** float(suffix[1:])
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

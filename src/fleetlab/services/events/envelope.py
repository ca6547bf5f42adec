"""The versioned event envelope, its schema and the PutEvents size arithmetic.

An envelope is the ``detail`` of an EventBridge event whose detail-type
carries the version (``agent.step.requested.v1``). It names the work
(``trace_id``), the conversation, the step and the agent class, and holds its
payload inline or, past the size limit, as a ``payload_ref`` to S3.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from fleetlab.core.errors import EnvelopeError

if TYPE_CHECKING:
    import jsonschema

SCHEMA_VERSION = 1
REQUESTED = f"agent.step.requested.v{SCHEMA_VERSION}"
COMPLETED = f"agent.step.completed.v{SCHEMA_VERSION}"
SOURCE = "fleet.coordinator"

PUT_EVENTS_REQUEST_LIMIT = 1_048_576  # bytes, the whole PutEvents request (classic bus)
PUT_EVENTS_MAX_ENTRIES = 10  # entries per request on a classic bus
TIME_FIELD_BYTES = 14  # AWS counts the Time parameter as 14 bytes
SFN_PAYLOAD_LIMIT = 262_144  # 256 KiB: the next cap downstream, so the default claim-check threshold


@dataclass(frozen=True)
class Envelope:
    """One agent step request. Build it, then ``detail()`` for the wire.

    Built only with fields that follow envelope v1: EnvelopeError otherwise,
    naming every field the schema refuses and what it allows.
    """

    trace_id: str
    conversation_id: str
    step: int
    agent_class: str
    payload: Any = None
    payload_ref: dict[str, Any] | None = None
    model_policy: str | None = None
    ttl_seconds: int | None = None
    task_token: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        validate_detail(self.detail(), root="", hint="the envelope was not built; nothing was published")

    def detail(self) -> dict[str, Any]:
        """The ``detail`` dict for the wire: the schema version, then every field that is set."""
        detail: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "trace_id": self.trace_id,
            "conversation_id": self.conversation_id,
            "step": self.step,
            "agent_class": self.agent_class,
        }
        optional = {
            "payload": self.payload,
            "payload_ref": self.payload_ref,
            "model_policy": self.model_policy,
            "ttl_seconds": self.ttl_seconds,
            "task_token": self.task_token,
        }
        detail.update({k: v for k, v in optional.items() if v is not None})
        return detail

    @classmethod
    def from_detail(cls, detail: Any) -> Envelope:
        """Parse and validate a received ``detail``. Raises EnvelopeError naming ``detail.<field>``."""
        validate_detail(detail, hint="the event does not follow envelope v1")
        return cls._of_checked_fields(
            trace_id=detail["trace_id"],
            conversation_id=detail["conversation_id"],
            step=detail["step"],
            agent_class=detail["agent_class"],
            payload=detail.get("payload"),
            payload_ref=detail.get("payload_ref"),
            model_policy=detail.get("model_policy"),
            ttl_seconds=detail.get("ttl_seconds"),
            task_token=detail.get("task_token"),
        )

    @classmethod
    def _of_checked_fields(cls, **values: Any) -> Envelope:
        """An envelope of fields taken from a detail that ``validate_detail`` passed: not validated again.

        Its ``detail()`` is that detail less any ``payload: null``, so it follows envelope v1 too.
        """
        envelope = object.__new__(cls)
        for spec in fields(cls):
            value = values.get(spec.name, spec.default)
            if value is MISSING:
                value = spec.default_factory()  # type: ignore[misc]
            object.__setattr__(envelope, spec.name, value)
        return envelope

    def entry(self, bus_name: str, *, source: str = SOURCE, detail_type: str = REQUESTED) -> dict[str, Any]:
        """The PutEvents entry for this envelope on ``bus_name``."""
        return {
            "EventBusName": bus_name,
            "Source": source,
            "DetailType": detail_type,
            "Detail": json.dumps(self.detail(), separators=(",", ":")),
        }


@cache
def envelope_schema() -> dict[str, Any]:
    """The JSON schema of envelope version 1."""
    text = resources.files("fleetlab").joinpath("schemas/envelope-v1.json").read_text()
    return json.loads(text)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # imported on first use: with its format extras it takes ~2 s to import

    return jsonschema.Draft202012Validator(envelope_schema())


def validate_detail(detail: Any, *, root: str = "detail", hint: str = "") -> None:
    """Raise EnvelopeError unless ``detail`` follows envelope v1.

    The error names the first bad field (as ``root.field``; just ``field`` when
    ``root`` is empty) and its message states every bad field, each with what
    the schema allows.
    """
    errors = sorted(_validator().iter_errors(detail), key=lambda e: len(e.path))  # stable: the schema's order
    problems: dict[str, str] = {}
    for error in errors:
        problems.setdefault(_field_of(error, root), _problem_of(error))
    if not problems:
        return
    (first, problem), *others = problems.items()
    raise EnvelopeError(first, problem + "".join(f"; {name}: {why}" for name, why in others), hint=hint)


def _field_of(error: jsonschema.ValidationError, root: str) -> str:
    parts = [root] if root else []
    parts += [f"[{p}]" if isinstance(p, int) else str(p) for p in error.path]
    if error.validator in ("required", "additionalProperties"):
        parts.append(error.message.split("'")[1] if "'" in error.message else "?")
    elif error.validator == "not":
        parts.append("payload")
    return ".".join(parts).replace(".[", "[") or "detail"


def _problem_of(error: jsonschema.ValidationError) -> str:
    rule, value = error.validator_value, error.instance
    match error.validator:
        case "required":
            return "is required"
        case "additionalProperties":
            return "is not a field of envelope v1"
        case "not":
            return "give either payload or payload_ref, not both"
        case "type":
            return f"must be {_types(rule)}, got {value!r}"
        case "const":
            return f"must be {rule!r}, got {value!r}"
        case "minimum":
            return f"must be at least {rule}, got {value!r}"
        case "maximum":
            return f"must be at most {rule}, got {value!r}"
        case "minLength":
            return "must not be empty" if rule == 1 else f"must be at least {rule} characters, got {value!r}"
        case "maxLength":
            return f"must be at most {rule} characters, got {len(value)}"
        case "pattern":
            return f"must match {rule}, got {value!r}"
    return error.message


def _types(names: str | list[str]) -> str:
    """``"integer"`` -> "an integer"; a list -> "one of: object, array, ..."."""
    if isinstance(names, list):
        return "one of: " + ", ".join(names)
    return f"an {names}" if names[0] in "aeiou" else f"a {names}"


def entry_size(entry: dict[str, Any]) -> int:
    """Bytes AWS counts for one PutEvents entry.

    Time costs 14 bytes when present; Source, DetailType, Detail and each
    Resources string cost their UTF-8 length. The delivered event is a
    little larger than this, so keep a margin below the request limit.
    """
    size = TIME_FIELD_BYTES if entry.get("Time") is not None else 0
    for key in ("Source", "DetailType", "Detail"):
        size += len(str(entry.get(key, "")).encode("utf-8"))
    size += sum(len(r.encode("utf-8")) for r in entry.get("Resources", []))
    return size


def batches(entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split entries into PutEvents requests: at most 10 entries and 1 MB each.

    Raises EnvelopeError for a single entry over the limit (claim-check it first).
    """
    requests: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    current_size = 0
    for index, entry in enumerate(entries):
        size = entry_size(entry)
        if size > PUT_EVENTS_REQUEST_LIMIT:
            raise EnvelopeError(
                f"entries[{index}]",
                f"is {size:,} bytes, over the {PUT_EVENTS_REQUEST_LIMIT:,}-byte PutEvents limit",
                hint="move the payload to S3 with ClaimCheck.offload()",
            )
        if current and (len(current) == PUT_EVENTS_MAX_ENTRIES or current_size + size > PUT_EVENTS_REQUEST_LIMIT):
            requests.append(current)
            current, current_size = [], 0
        current.append(entry)
        current_size += size
    if current:
        requests.append(current)
    return requests

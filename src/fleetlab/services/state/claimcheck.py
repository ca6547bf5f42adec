"""Claim-check: large payloads live in S3, and the envelope (or the step's answer) carries a reference.

Past ``threshold`` bytes (by default Step Functions' 256 KiB state limit, the
next cap downstream of EventBridge's 1 MB request) a payload is written to
the claim-check bucket and replaced by ``payload_ref``. The same holds for
a step's output on its way back through SendTaskSuccess (``offload_value``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from fleetlab.services.events.envelope import SFN_PAYLOAD_LIMIT, Envelope


class ClaimCheck:
    """Keeps large payloads in S3 and puts a reference in the envelope.

    ``offload`` is a no-op below ``threshold`` bytes; ``fetch`` reads a
    reference back. Keys are derived from the trace id, so a retried offload
    overwrites the same object instead of leaking a new one.
    """

    def __init__(self, s3: Any, bucket: str, *, threshold: int = SFN_PAYLOAD_LIMIT) -> None:
        self.s3 = s3
        self.bucket = bucket
        self.threshold = threshold

    def offload(self, envelope: Envelope, *, always: bool = False) -> Envelope:
        """Return ``envelope`` with its payload moved to S3 when it is too large (or ``always``)."""
        if envelope.payload is None and not always:
            return envelope
        body = _json_bytes(envelope.payload if envelope.payload is not None else {})
        if len(body) <= self.threshold and not always:
            return envelope
        ref = self._put(f"conv/{envelope.conversation_id}/{envelope.trace_id}/input.json", body)
        return _replace_payload(envelope, ref)

    def offload_value(self, key: str, value: Any) -> Any:
        """``value`` itself when its JSON fits in ``threshold`` bytes, else ``{"payload_ref": ...}`` (stored under ``key``)."""
        body = _json_bytes(value)
        if len(body) <= self.threshold:
            return value
        return {"payload_ref": self._put(key, body)}

    def fetch_value(self, value: Any) -> Any:
        """The value ``offload_value`` kept: read back from S3 when ``value`` is a reference."""
        if isinstance(value, dict) and set(value) == {"payload_ref"}:
            return self._get(value["payload_ref"])
        return value

    def fetch(self, envelope: Envelope) -> Any:
        """The envelope's payload, read from S3 when it is a reference."""
        if envelope.payload_ref is None:
            return envelope.payload
        return self._get(envelope.payload_ref)

    def _get(self, ref: dict[str, Any]) -> Any:
        return json.loads(self.s3.get_object(Bucket=ref["bucket"], Key=ref["key"])["Body"].read())

    def _put(self, key: str, body: bytes) -> dict[str, Any]:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        return {"type": "s3", "bucket": self.bucket, "key": key, "bytes": len(body)}


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _replace_payload(envelope: Envelope, ref: dict[str, Any]) -> Envelope:
    return replace(envelope, payload=None, payload_ref=ref)

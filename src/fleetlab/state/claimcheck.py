"""Claim-check: large payloads live in S3, and the envelope carries a reference.

Past ``threshold`` bytes (by default Step Functions' 256 KiB state limit, the
next cap downstream of EventBridge's 1 MB request) a payload is written to
the claim-check bucket and replaced by ``payload_ref``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ..events.envelope import SFN_PAYLOAD_LIMIT, Envelope


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
        body = json.dumps(envelope.payload if envelope.payload is not None else {}, separators=(",", ":")).encode()
        if len(body) <= self.threshold and not always:
            return envelope
        key = f"conv/{envelope.conversation_id}/{envelope.trace_id}/input.json"
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        ref = {"type": "s3", "bucket": self.bucket, "key": key, "bytes": len(body)}
        return _replace_payload(envelope, ref)

    def fetch(self, envelope: Envelope) -> Any:
        """The envelope's payload, read from S3 when it is a reference."""
        if envelope.payload_ref is None:
            return envelope.payload
        ref = envelope.payload_ref
        body = self.s3.get_object(Bucket=ref["bucket"], Key=ref["key"])["Body"].read()
        return json.loads(body)


def _replace_payload(envelope: Envelope, ref: dict[str, Any]) -> Envelope:
    return replace(envelope, payload=None, payload_ref=ref)

"""Reading boto3's answers: the error code and HTTP status of a ClientError."""

from __future__ import annotations

from botocore.exceptions import ClientError


def error_code(exc: ClientError) -> str:
    """The service's error code (``ConditionalCheckFailedException``, ...), or ``"unknown"``."""
    return str(exc.response.get("Error", {}).get("Code") or "unknown")


def http_status(exc: ClientError) -> int:
    """The HTTP status the service answered with (0 when boto3 did not record one)."""
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)

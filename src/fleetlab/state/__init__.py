"""The state plane: the idempotency store (``idempotency``) and claim-check to S3 (``claimcheck``)."""

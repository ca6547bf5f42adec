"""The state plane: DynamoDB condition clauses (``conditions``), the idempotency store
(``idempotency``) and claim-check to S3 (``claimcheck``)."""

"""The state plane: DynamoDB condition clauses (``conditions``), the idempotency store
(``idempotency``), the token governor's shared counter (``governor``) and claim-check to S3 (``claimcheck``)."""

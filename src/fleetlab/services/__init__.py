"""Services: one package per AWS service the course teaches (SQS, the state store, EventBridge, Step Functions, the agents)."""

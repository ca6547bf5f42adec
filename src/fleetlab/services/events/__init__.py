"""EventBridge: the versioned event envelope and its PutEvents arithmetic (``envelope``)."""

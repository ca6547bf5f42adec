"""What the lab 04 checks share: the two names a missed heartbeat goes by."""

AWS_HEARTBEAT_ERROR = "States.HeartbeatTimeout"
HEARTBEAT_ERRORS = (AWS_HEARTBEAT_ERROR, "States.Timeout")
"""AWS reports a missed heartbeat as the first; moto and LocalStack as the second, which TimeoutSeconds raises too."""

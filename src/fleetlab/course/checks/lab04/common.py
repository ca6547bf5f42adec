"""What the lab 04 checks share: the two names a missed heartbeat goes by."""

AWS_HEARTBEAT_ERROR = "States.HeartbeatTimeout"
HEARTBEAT_ERRORS = (AWS_HEARTBEAT_ERROR, "States.Timeout")
"""AWS reports a missed heartbeat as the first, and its error-name reference defines the second to cover it too
(a Catch on either catches it there); moto and LocalStack report it as the second, which TimeoutSeconds raises too."""

"""What the lab 04 checks share: the two names a missed heartbeat goes by, and a refused task in the learner's
words."""

from fleetlab.core.errors import AslError

AWS_HEARTBEAT_ERROR = "States.HeartbeatTimeout"
HEARTBEAT_ERRORS = (AWS_HEARTBEAT_ERROR, "States.Timeout")
"""AWS reports a missed heartbeat as the first, and its error-name reference defines the second to cover it too
(a Catch on either catches it there); moto and LocalStack report it as the second, which TimeoutSeconds raises too."""


def refused_task(refused: AslError) -> str:
    """Why Step Functions refuses the task, naming the field as the task holds it ("the task's HeartbeatSeconds"),
    not by its path in the definition (``States.RunStep.HeartbeatSeconds``)."""
    parts = refused.field.split(".", 2)
    field = parts[2] if len(parts) == 3 and parts[0] == "States" else refused.field
    joined = f"{field} {refused.problem}" if refused.problem[:1].isdigit() else f"{field}: {refused.problem}"
    return f"the task's {joined}" + (f" ({refused.hint})" if refused.hint else "")

"""Step Functions: state-machine definitions (``asl``), executions and their histories
(``executions``), and the callbacks a worker holding a task token sends (``callbacks``)."""

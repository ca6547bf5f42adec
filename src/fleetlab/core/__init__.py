"""Core: time, errors, units, statuses and the instruments every service takes as parameters (faults, the effects ledger, tracing)."""

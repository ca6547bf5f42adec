"""Backends: choosing and opening moto, moto-server, LocalStack or AWS; resources, service time, prices and the fidelity table."""

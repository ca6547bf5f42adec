"""The course's tooling that no lab imports: a LocalStack without Docker, the notebook kernel runner, the call counter, the fidelity document."""

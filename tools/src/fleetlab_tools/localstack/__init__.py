"""A real LocalStack without Docker (`host`) and the course run on it (`suite`)."""

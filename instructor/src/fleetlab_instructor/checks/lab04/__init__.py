"""Lab 04: the instructor's side of its checks."""

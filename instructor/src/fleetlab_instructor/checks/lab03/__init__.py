"""Lab 03: the instructor's side of its checks."""

"""Lab 06: the instructor's side of its checks."""

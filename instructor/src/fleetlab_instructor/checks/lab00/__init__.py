"""Lab 00: the instructor's side of its checks."""

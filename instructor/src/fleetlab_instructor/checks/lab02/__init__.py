"""Lab 02: the instructor's side of its checks."""

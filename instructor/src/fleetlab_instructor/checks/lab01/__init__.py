"""Lab 01: the instructor's side of its checks."""

"""Lab 07: the instructor's side of its checks."""

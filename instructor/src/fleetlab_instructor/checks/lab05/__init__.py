"""Lab 05: the instructor's side of its checks."""

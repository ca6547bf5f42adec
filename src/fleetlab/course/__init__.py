"""Course: lab sessions, experiments and the public side of every check."""

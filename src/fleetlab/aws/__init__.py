"""AWS itself: which backend the clients point at (``backends``), and the resources the
course makes and removes there (``topology``)."""

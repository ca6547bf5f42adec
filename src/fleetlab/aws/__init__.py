"""AWS itself: which backend the clients point at (``backends``), making and removing
resources (``resources``), the course's reference topology (``topology``), sweeping what a
prefix names (``sweep``), and reading boto3's answers (``responses``)."""

"""Hand-out: what the learners get. ``assign`` writes the student notebooks from the instructor notebooks,
``demos`` says which of their cells grading may leave out, ``release`` writes the learner's course.

The entries the ``fleetlab`` commands call: ``assign.assign`` (and ``assign.stale`` for ``--check``) and
``release.write_release``. Putting a release into each learner's home is the exchange's ``hand_out`` (``fleetlab_instructor.collect``).
"""

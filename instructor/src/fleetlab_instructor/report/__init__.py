"""Report: what grading found, for each reader. ``gradebook`` (the CSV, the terminal table, shard files),
``feedback`` (a file per learner), ``room`` (the facilitator's room report), ``adjust`` (a regrade,
lateness, overrides), ``exports`` (Canvas's import, Gradescope's results.json and autograder).

The entries the ``fleetlab`` commands call: ``publish.publish`` (after ``grade``), ``publish.publish_merged``
(``gradebook merge``), ``adjust.adjust_gradebook`` (``gradebook adjust``), ``exports.write_canvas`` and
``exports.write_results`` (``gradebook canvas`` and ``gradebook gradescope``).
"""

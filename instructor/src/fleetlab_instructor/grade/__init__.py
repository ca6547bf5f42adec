"""Grade: the room's notebooks to a row of points and reports per notebook; ``batch.grade_batch`` is the entry.

``submissions`` (which learner and lab each notebook is, and which a shard grades), ``grade`` (one
notebook's steps, and the batch), ``judging`` (the grader's side of the judge), ``environment`` (what a
kernel starts with), ``cells`` (a cell as the learner names it), ``journal`` (finished rows kept, to resume), ``batch``
(the stage's entry, what ``fleetlab grade`` runs).
"""

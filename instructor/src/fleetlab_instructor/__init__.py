"""The instructor's side of fleetlab: hidden cases, reference answers, the wrong and right catalogues, the grader and the bench. Never part of what a learner installs."""

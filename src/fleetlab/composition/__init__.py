"""Composition: the services wired into the reference fleet: topology, pipeline, scaling and cost."""

"""The agents' side: the seeded fake model that stands in for an LLM call (``model``)."""

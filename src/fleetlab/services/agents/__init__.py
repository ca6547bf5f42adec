"""The agents' side: the seeded fake model that stands in for an LLM call (``model``), and the router that
spreads calls over its deployments, with retries, cooldowns and fallbacks (``router``)."""

"""The capability probe and the fidelity table: where this backend differs from AWS.

``probe(backend)`` measures, through boto3 on the open backend, each contract
the labs rely on (when a message is dead-lettered, the error a missed heartbeat
reports, whether a replay honours its time window, ...) and returns a
``FidelityTable``: per feature, what AWS documents, what this backend did, and
what fleetlab or the learner does where they differ. Labs, tests and
``docs/fidelity.md`` read the table; nothing hard-codes an emulator's quirk.

probe → table → cache:

* ``probes``: one module per AWS service; each ``Probe`` runs in its own
  ``Scratch`` space on the backend and returns an ``Observation`` per
  ``Feature``, which becomes that feature's ``Finding``.
* ``table``: the ``FidelityTable`` of every finding, in probe order, with the
  versions measured; markdown, rich and JSON renderings.
* ``cache``: ``probe()`` measures once per backend session and caches the
  table as JSON for as long as those versions hold; ``aws`` is the reference,
  never probed.
* ``docs/fidelity.md`` is written by the course's tooling: ``python -m fleetlab_tools.fidelity_doc --out docs/fidelity.md``.

Measuring jumps a virtual clock about 3 days forward (``probes.dynamodb``)
and back again: afterwards the clock reads what it read before.
"""

from fleetlab.backends.fidelity.cache import cache_path, probe
from fleetlab.backends.fidelity.probes import feature_ids
from fleetlab.backends.fidelity.probes.base import Feature, Observation, Probe
from fleetlab.backends.fidelity.probes.scratch import Scratch
from fleetlab.backends.fidelity.table import FidelityTable, Finding, render_markdown

__all__ = [
    "Feature",
    "FidelityTable",
    "Finding",
    "Observation",
    "Probe",
    "Scratch",
    "cache_path",
    "feature_ids",
    "probe",
    "render_markdown",
]

"""The environment a submission's kernel and its judge start with: no credentials, a home of its own.

The kernel gets an allowlist of the grader's variables (enough to find
Python and fleetlab), never an ``AWS_*`` one, never the opt-in to real AWS.
The SDK's credential sources are pointed away: the shared files at a path
that does not exist, instance metadata disabled, ``HOME`` a fresh directory
(IPython's folder inside it). ``FLEETLAB_BACKEND`` is ``moto``;
``FLEETLAB_GRADED=1`` makes ``check()`` keep the answer and run no case.
The walls around the learner's code are the sandbox's
(``fleetlab.course.judge.sandbox``): there the instructor's package is absent.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from fleetlab.backends.backend import open_backend
from fleetlab.backends.fidelity.cache import TABLE_FILES, cache_folder, failed_findings, probe
from fleetlab.backends.fidelity.table import FidelityTable
from fleetlab_tools.kernel_launcher import DIES_WITH_PARENT, WARM_VARIABLE

PASSED_THROUGH = re.compile(
    r"^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR|TEMP|TMP|PYTHONPATH|VIRTUAL_ENV|CONDA_PREFIX"
    r"|LD_LIBRARY_PATH|SYSTEMROOT|FLEETLAB_[A-Z0-9_]+)$"
)
NEVER_PASSED = frozenset({"FLEETLAB_ALLOW_REAL_AWS", "FLEETLAB_BACKEND", "FLEETLAB_HOME", "FLEETLAB_EXPECT_CHECKS",
                          "FLEETLAB_GRADED", WARM_VARIABLE})
"""The grader's own settings; and its warm kernels' template: a batch forks its kernels from its own, in the sandbox."""
NOWHERE = "nonexistent-credentials"


def kernel_env(grader_env: Mapping[str, str], home: Path, shared: Path) -> dict[str, str]:
    """The environment for one submission's kernel, whose home and cwd is ``home``.

    ``shared`` is a folder of caches the whole batch shares, so matplotlib
    builds its font cache once and the backend's fidelity is probed once.
    Neither holds anything of a learner's.
    """
    env = {name: value for name, value in grader_env.items() if PASSED_THROUGH.match(name) and name not in NEVER_PASSED}
    env.update(
        HOME=str(home),
        FLEETLAB_HOME=str(home / ".fleetlab"),
        FLEETLAB_BACKEND="moto",
        FLEETLAB_GRADED="1",
        MPLCONFIGDIR=str(shared / "matplotlib"),
        FLEETLAB_FIDELITY_CACHE=str(shared / "fidelity"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / NOWHERE / "credentials"),
        AWS_CONFIG_FILE=str(home / NOWHERE / "config"),
        AWS_EC2_METADATA_DISABLED="true",
        IPYTHONDIR=str(home / ".ipython"),
        **{DIES_WITH_PARENT: "1"},  # a killed grader leaves no kernel behind
    )
    return env


def measure_graded_backend() -> FidelityTable:
    """Make sure the grader's own cache holds the fidelity table of ``moto``, the backend every graded kernel opens.

    Measured once per machine (a few seconds, in the grader's process) and
    then read from the cache; without it, the first kernels of every batch
    would each measure it for themselves. A table with a failed probe is
    not cached (``probe`` logs which): it is measured once more, and if a
    probe fails again the table is returned uncached, its failures named.
    """
    backend = open_backend("moto")
    try:
        table = probe(backend)
        return probe(backend, refresh=True) if failed_findings(table) else table
    finally:
        backend.close()


def share_fidelity_tables(shared: Path) -> None:
    """Copy the grader's own cached fidelity tables into the batch's shared cache (``shared/fidelity``).

    A kernel of the batch then probes no backend the grader's machine has
    measured already (each probe costs a kernel a second or two). A table
    holds what an emulator does, nothing of a learner's; nothing is copied back.
    """
    target = shared / "fidelity"
    target.mkdir(parents=True, exist_ok=True)
    for table in cache_folder().glob(TABLE_FILES):
        shutil.copyfile(table, target / table.name)

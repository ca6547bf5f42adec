"""``probe()``: a backend's fidelity table, measured once per session and cached on disk.

* A table is measured once per backend session, and cached as JSON in
  ``$FLEETLAB_HOME`` or ``<repo root>/.fleetlab`` as
  ``fidelity-<backend>-<emulator version>.json``. The cache is used only when
  its versions (emulator, boto3, the probe set) equal the current ones, and a
  table with a failed probe is never cached. ``refresh=True`` re-measures.
* A lab's set-up cell reads the table only when it is cached (``cached``);
  otherwise it has it measured in another process (``background``), and
  ``probe()`` waits for that measurement rather than measuring twice.
* The ``aws`` backend is never probed: it *is* the reference, so its table
  matches AWS everywhere and creates nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
from dataclasses import asdict
from pathlib import Path

import boto3

from fleetlab.backends.backend import Backend
from fleetlab.backends.fidelity import background, probes
from fleetlab.backends.fidelity.probes.base import Observation
from fleetlab.backends.fidelity.table import FidelityTable, Finding
from fleetlab.core.errors import ConfigError
from fleetlab.core.files import write_atomically
from fleetlab.core.settings import settings

_log = logging.getLogger(__name__)

AWS_ITSELF = "AWS itself"

_EMULATOR_PACKAGE = {"moto": "moto", "moto-server": "moto", "localstack": "localstack"}
_session_tables: dict[int, tuple[weakref.ref[Backend], FidelityTable]] = {}


def probe(backend: Backend, *, refresh: bool = False) -> FidelityTable:
    """The fidelity table of ``backend``: measured once per session, cached on disk.

    Reuses this session's table, else a cache file with the same versions,
    else measures (always, with ``refresh=True``): a few seconds on moto,
    after which a virtual clock reads what it read before. ``aws`` is the
    reference and is never probed.
    """
    if backend.name == "aws":
        return _aws_reference()
    if not refresh:
        table = cached(backend)
        if table is None:
            background.wait(cache_path(backend))
            table = cached(backend)
        if table is not None:
            return table
    if backend.closed:
        raise ConfigError(f"the {backend.name} backend is closed; open it again (open_backend) to probe it")
    table = FidelityTable(backend=backend.name, versions=_versions(backend), findings=probes.measure(backend))
    failed = failed_findings(table)
    if failed:
        _log.warning("not caching the %s fidelity table: %s", backend.name,
                     "; ".join(f"{f.feature}: {f.observed}" for f in failed))
    else:
        _write_cache(backend, table)
    return _remember(backend, table)


def cached(backend: Backend) -> FidelityTable | None:
    """``backend``'s table if this session or the cache holds it (``aws``: the reference); None, measuring nothing."""
    if backend.name == "aws":
        return _aws_reference()
    table = _session_table(backend) or _read_cache(backend)
    return _remember(backend, table) if table is not None else None


def failed_findings(table: FidelityTable) -> tuple[Finding, ...]:
    """The findings of ``table`` whose probe failed (a table holding one is never cached)."""
    return tuple(f for f in table.findings if f.observed.startswith(probes.PROBE_FAILED))


def _aws_reference() -> FidelityTable:
    findings = tuple(feature.finding(Observation(AWS_ITSELF, True)) for feature in probes.features())
    return FidelityTable(backend="aws", versions=_common_versions(), findings=findings)


def _versions(backend: Backend) -> dict[str, str]:
    package, version = _emulator(backend)
    return {package: version, **_common_versions()}


def _emulator(backend: Backend) -> tuple[str, str]:
    """The package that emulates ``backend`` and its version."""
    return _EMULATOR_PACKAGE.get(backend.name, backend.name), backend.details.get("version", "unknown")


def _common_versions() -> dict[str, str]:
    return {"boto3": boto3.__version__, "probes": _probe_set_fingerprint()}


_OBSERVATIONS_REVISION = 2
"""Raise it when a probe words what it saw differently: the cached tables hold the old words."""


def _probe_set_fingerprint() -> str:
    """Changes whenever a feature is added, removed or reworded, or the observations' revision moves."""
    specs = [asdict(feature) for feature in probes.features()]
    text = json.dumps({"features": specs, "observations": _OBSERVATIONS_REVISION}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _session_table(backend: Backend) -> FidelityTable | None:
    entry = _session_tables.get(id(backend))
    if entry is None or entry[0]() is not backend:
        return None
    return entry[1]


def _remember(backend: Backend, table: FidelityTable) -> FidelityTable:
    _session_tables[id(backend)] = (weakref.ref(backend), table)
    return table


TABLE_FILES = "fidelity-*.json"
"""The names of the cached tables in ``cache_folder()``."""


def cache_folder() -> Path:
    """The folder of the cached tables: ``$FLEETLAB_FIDELITY_CACHE`` (a folder shared by many kernels, as the
    grader's batch does), else ``$FLEETLAB_HOME``, else ``<repo root>/.fleetlab``."""
    chosen = settings()
    return chosen.fidelity_cache or chosen.home or _repo_root(Path.cwd()) / ".fleetlab"


def cache_path(backend: Backend) -> Path:
    """Where ``backend``'s table is cached, in ``cache_folder()``."""
    return cache_folder() / f"fidelity-{backend.name}-{_emulator(backend)[1]}.json"


def _repo_root(start: Path) -> Path:
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").exists() or (directory / ".git").exists():
            return directory
    return start


def _read_cache(backend: Backend) -> FidelityTable | None:
    path = cache_path(backend)
    try:
        table = FidelityTable.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ConfigError) as exc:
        _log.warning("ignoring unreadable fidelity cache %s (%s); probing again", path, exc)
        return None
    if table.backend != backend.name or table.versions != _versions(backend):
        return None
    return table


def _write_cache(backend: Backend, table: FidelityTable) -> None:
    path = cache_path(backend)
    try:
        write_atomically(path, json.dumps(table.to_dict(), indent=2) + "\n")
    except OSError as exc:  # the table is still valid for this session
        _log.warning("could not cache the fidelity table at %s (%s); set FLEETLAB_HOME to a writable folder",
                     path, exc)

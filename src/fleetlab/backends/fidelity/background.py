"""Measuring a backend's fidelity table in another process, so a lab's set-up cell never waits for it.

A cold cache (a first lab on this backend and version) used to cost the set-up
cell the whole probe, a few seconds. ``start(backend)`` instead starts
``python -m fleetlab.backends.fidelity <backend>``, which opens its own
backend of that name, measures, and writes the cache that every later lab
reads. One measurement at a time per cache file: the one running holds
``<cache file>.measuring`` (its process id), and a marker whose process is
gone is taken over. ``wait(backend)`` waits for a running measurement, so
``probe()`` reads its table rather than measuring a second time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from fleetlab.backends.backend import Backend

WAIT_SECONDS = 180.0
"""The longest ``wait`` waits; then ``probe()`` measures for itself."""


def marker(cache_file: Path) -> Path:
    """The file a running measurement of ``cache_file`` holds."""
    return cache_file.with_name(cache_file.name + ".measuring")


def start(backend: Backend, cache_file: Path) -> bool:
    """Start measuring ``backend``'s table into ``cache_file`` in another process, unless one already is.

    False when no process could be started (the cache folder cannot be written): the caller measures.
    """
    held = marker(cache_file)
    try:
        held.parent.mkdir(parents=True, exist_ok=True)
        if _running(held):
            return True
        with contextlib.suppress(FileNotFoundError):
            held.unlink()
        fd = os.open(held, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return True  # another kernel started it a moment ago
    except OSError:
        return False
    with os.fdopen(fd, "w") as out:
        try:
            process = subprocess.Popen(  # noqa: S603 - this interpreter, this package
                [sys.executable, "-m", "fleetlab.backends.fidelity", backend.name, str(held)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            held.unlink(missing_ok=True)
            return False
        out.write(str(process.pid))
    _children.append(process)
    return True


_children: list[subprocess.Popen[bytes]] = []  # the measurements this process started, reaped when they end


def wait(cache_file: Path, timeout: float = WAIT_SECONDS) -> None:
    """Return when no measurement of ``cache_file`` is running, or after ``timeout`` seconds."""
    held = marker(cache_file)
    deadline = time.monotonic() + timeout
    while _running(held) and time.monotonic() < deadline:
        time.sleep(0.1)


def _running(held: Path) -> bool:
    """True when ``held`` names a process that is still alive (one of ours that ended is reaped)."""
    try:
        text = held.read_text()
        if not text:  # just made, its process id not written yet (or its maker died in between)
            return time.time() - held.stat().st_mtime < 10
        pid = int(text)
    except (OSError, ValueError):
        return False
    for child in list(_children):
        if child.pid == pid and child.poll() is not None:
            _children.remove(child)
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

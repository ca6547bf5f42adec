"""Fewer garbage collections while a long run makes many calls to an in-process emulator.

Each boto3 call to moto in the same process leaves a few dozen objects in
reference cycles (botocore's response parsers, moto's werkzeug requests),
which only CPython's cyclic collector frees. At the default thresholds
(700, 10, 10) a 10,000-step chaos day runs about 4,000 collections, and
each full one walks a heap that grows with the day (every stored item, every
traced hop). ``fewer_collections`` raises the thresholds while a run lasts
and puts back the ones it found; what is freed, and when a run's results
come out, does not change.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

LONG_RUN_THRESHOLDS = (50_000, 50, 100)
"""Allocations before a young collection, and young (then middle) collections before an older one."""


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect with ``LONG_RUN_THRESHOLDS`` inside the block; the thresholds found are restored on exit."""
    found = gc.get_threshold()
    gc.set_threshold(*LONG_RUN_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*found)

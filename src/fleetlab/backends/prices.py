"""AWS's dated list prices and the calls each subject made on moto: the data a cost estimate multiplies.

``data/prices-us-east-1.json`` is written by hand from AWS's pricing pages and
names its date and sources; ``data/calls.json`` is measured by the course's
tooling (``python -m fleetlab_tools.callcount``). Both are read once.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
CALLS_FILE = DATA_DIR / "calls.json"
PRICES_FILE = DATA_DIR / "prices-us-east-1.json"
REGENERATE = "python -m fleetlab_tools.callcount"

__all__ = ["CALLS_FILE", "PRICES_FILE", "REGENERATE", "load_calls", "load_prices"]


@cache
def load_prices() -> dict[str, Any]:
    """The dated price file."""
    return json.loads(PRICES_FILE.read_text())


@cache
def load_calls() -> dict[str, Any]:
    """The recorded counts (``data/calls.json``)."""
    return json.loads(CALLS_FILE.read_text())

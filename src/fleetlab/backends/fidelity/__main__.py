"""``python -m fleetlab.backends.fidelity BACKEND [MARKER]``: cache BACKEND's fidelity table.

With MARKER (the file it holds, removed when done), what ``background.start`` runs: it measures. Without,
what ``make venv`` runs, so a learner's first lab finds the table cached: it measures unless it is cached.
"""

import sys
from pathlib import Path

from fleetlab.backends.backend import open_backend
from fleetlab.backends.fidelity.cache import probe


def main(argv: list[str]) -> int:
    name, held = argv[0], (Path(argv[1]) if len(argv) > 1 else None)
    try:
        backend = open_backend(name)
        try:
            probe(backend, refresh=held is not None)
        finally:
            backend.close()
    finally:
        if held is not None:
            held.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``python -m fleetlab.fidelity --out docs/fidelity.md``: see ``generator``."""

from .generator import main

if __name__ == "__main__":
    raise SystemExit(main())

"""The generator of ``docs/fidelity.md``, run as ``python -m fleetlab_tools.fidelity_doc``.

``python -m fleetlab_tools.fidelity_doc --out docs/fidelity.md`` probes moto and
moto-server (and LocalStack with ``--backends moto,moto-server,localstack``)
one after the other and writes one markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fleetlab.backends.backend import BACKEND_NAMES, open_backend
from fleetlab.backends.fidelity.cache import probe
from fleetlab.backends.fidelity.table import FidelityTable, render_markdown
from fleetlab.core.errors import BackendUnavailable

_COLUMNS = {"moto": "moto", "moto-server": "moto-server", "localstack": "LocalStack"}
_DOC_HEADER = """# Fidelity: where each backend differs from AWS

Measured by fleetlab's capability probe (`src/fleetlab/backends/fidelity/`) through boto3,
not written by hand. Regenerate with
`python -m fleetlab_tools.fidelity_doc --out docs/fidelity.md` (add
`--backends moto,moto-server,localstack` with LocalStack running).

"""

_TIME_SECTION = """
## Time

The probes measure each service on its own time: on moto and moto-server with
production values that the virtual clock jumps over, on LocalStack in real
seconds (a 2 s visibility timeout). The labs run on *lab time*
([`docs/backends.md`](backends.md#time-on-a-real-clock)):

| backend | lab time | what a lab sees |
|---|---|---|
| moto, moto-server | virtual | every wait passes at once, replayed the same way every run; Step Functions timers run in real time |
| LocalStack, AWS | real, scaled x60 (`FLEETLAB_TIME_SCALE`) | a lab minute passes in a real second; SQS durations are converted to whole seconds of service time (a 30 s visibility timeout is kept as 60 s); Step Functions timers are not scaled |

- **A wait longer than 20 lab minutes jumps.** On a scaled clock one
  `clock.sleep` runs at most 20 real seconds; the rest of it moves lab time
  on at once. The library's own time (model steps, leases, idempotency
  windows, checked by the store against the clock) jumps with it, and timers
  due in the jumped part still fire; the services see only the first 20 lab
  minutes. A lab prints one line the first time it happens.
- **A long run may skip and catch the service up.** Lab 07's chaos day skips
  its own waits (model steps, held steps, quota windows, the replay's reach,
  a visibility timeout waited out) and releases each received message once
  lab time passes its visibility timeout (ChangeMessageVisibility to 0), so
  SQS redelivers it at its lab time
  ([`docs/backends.md`](backends.md#time-on-a-real-clock)). Its invariants
  hold by the same counts as on moto; how often a worker crashed and the API
  calls per step may move a little, since lab time also runs on during every
  call on a scaled clock.
- **A service's lateness is scaled too.** A redelivery 1 s late
  (`sqs.redelivery_delay`) is 60 lab seconds late, and a Step Functions
  execution that takes a real second takes a lab minute.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Probe the named backends one at a time and write the markdown fidelity table."""
    args = _parse_args(argv)
    tables: dict[str, FidelityTable | None] = dict.fromkeys(_COLUMNS.values())
    for name in args.backends:
        tables[_COLUMNS[name]] = _probe_fresh(name)
    if not any(tables.values()):
        print("no backend could be probed", file=sys.stderr)
        return 1
    text = _DOC_HEADER + render_markdown(tables) + _TIME_SECTION
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fleetlab_tools.fidelity_doc", description=main.__doc__)
    parser.add_argument("--out", default="-", help="markdown file to write (default: stdout)")
    parser.add_argument(
        "--backends",
        default="moto,moto-server",
        help="comma-separated, from: " + ", ".join(_COLUMNS) + " (default: moto,moto-server)",
    )
    args = parser.parse_args(argv)
    args.backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    unknown = [name for name in args.backends if name not in _COLUMNS]
    if unknown:
        probeable = ", ".join(_COLUMNS)
        refused = [n for n in unknown if n in BACKEND_NAMES]
        why = " (aws is the reference column, never probed)" if refused else ""
        parser.error(f"cannot probe {', '.join(unknown)}{why}; choose from {probeable}")
    return args


def _probe_fresh(name: str) -> FidelityTable | None:
    """Open ``name``, measure it, close it; None (and a note on stderr) if it cannot be opened."""
    try:
        backend = open_backend(name)
    except BackendUnavailable as exc:
        print(f"{name}: not probed: {exc}", file=sys.stderr)
        return None
    started = time.monotonic()
    try:
        table = probe(backend, refresh=True)
    finally:
        backend.close()
    print(f"{name}: probed in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return table


if __name__ == "__main__":
    raise SystemExit(main())

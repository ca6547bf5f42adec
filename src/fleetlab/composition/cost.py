"""What a lab would cost on real AWS, printed before the ``aws`` backend makes anything.

An estimate multiplies what a subject (a lab, ``fleetlab demo``, the contract
suite) asked of AWS when it ran on moto (``data/calls.json``, made by
``python -m fleetlab_tools.callcount``) by AWS's list prices
(``data/prices-us-east-1.json``, dated, naming its sources). Calls that AWS
does not bill are counted apart; calls the price file does not know are named.

``fleetlab cost [SUBJECT...]`` prints the estimates without opening any backend.

``require_opt_in(subject)`` is the gate the lab, the demo and the contract suite
call before opening the ``aws`` backend: without ``FLEETLAB_ALLOW_REAL_AWS=1``
it raises RealAwsRefused with the estimate in its message; with it, it prints
the estimate and returns it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rich import box
from rich.table import Table

from fleetlab.backends.backend import real_aws_allowed, real_aws_refused
from fleetlab.backends.prices import PRICES_FILE, REGENERATE, load_calls, load_prices
from fleetlab.core.rendering import plain_text


@dataclass
class CallCounts:
    """What one subject (a lab, the demo, the contract suite) asked of AWS."""

    calls: dict[str, int] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)
    transitions: int = 0
    executions: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "calls": dict(sorted(self.calls.items())), "items": dict(sorted(self.items.items()))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallCounts:
        return cls(calls=dict(data.get("calls", {})), items=dict(data.get("items", {})),
                   transitions=int(data.get("transitions", 0)), executions=int(data.get("executions", 0)))

NOTE_WIDTH = 100


@dataclass(frozen=True)
class Line:
    """One priced line: ``units`` of ``unit`` on ``service`` for ``usd``."""

    service: str
    unit: str
    units: float
    usd: float


@dataclass(frozen=True)
class Estimate:
    """The estimated cost of running ``subject`` once on real AWS."""

    subject: str
    lines: tuple[Line, ...]
    not_billed: int  # calls AWS does not charge for
    unknown: tuple[str, ...]  # billable-looking calls the price file has no price for
    measured: str  # how and when the calls were counted ("" when they never were)
    prices: dict[str, Any]

    @property
    def total_usd(self) -> float:
        return sum(line.usd for line in self.lines)

    def table(self) -> Table:
        """The priced lines, the calls AWS does not bill, and the total, as a rich table."""
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        for column, justify in (("service", "left"), ("units", "right"), ("unit", "left"), ("price", "right")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for line in self.lines:
            table.add_row(line.service, f"{line.units:,.0f}", line.unit, dollars(line.usd))
        table.add_row("not billed", f"{self.not_billed:,}", "calls (creating and deleting, STS)", dollars(0))
        table.add_section()
        under_a_cent = "less than a cent" if self.total_usd < 0.01 else ""
        table.add_row("total", "", under_a_cent, f"about {dollars(self.total_usd)}")
        return table

    def text(self) -> str:
        """The estimate as the learner reads it, before anything is created."""
        title = subject_title(self.subject)
        head = (f"Estimated cost of {title} on real AWS ({self.prices['region']} list prices in "
                f"{self.prices['currency']}, before any free tier):")
        if not self.measured:
            return "\n".join([
                head,
                f"  unknown: the calls of {title} were never counted; `{REGENERATE}` (from the repository root)",
                "  counts them on moto. Expect cents at most for a lab, but nobody has measured it.",
            ])
        rows = [plain_text(self.table())]
        if self.unknown:
            rows.append(f"not priced: {', '.join(self.unknown)} (no price in the price file)")
        notes = [
            f"Calls: what {title} made on {self.measured}.",
            f"Prices: fleetlab/backends/data/{PRICES_FILE.name}, written {self.prices['written']} from AWS's pricing pages "
            "without network access: check them before you rely on them. "
            f"Free tier: {self.prices['free_tier']}.",
            "Not included: storage while it runs, idle long polls on a real clock (up to 3 ReceiveMessage "
            "calls a minute per worker), messages and events Step Functions tasks send, and anything left "
            "behind by a kernel that died (every name starts with the run's prefix). Time is real on AWS: "
            "long waits take their full length.",
        ]
        return "\n".join([head, *rows, *(textwrap.fill(note, width=NOTE_WIDTH) for note in notes)])


def subject_title(subject: str) -> str:
    """How the estimate names ``subject``: "lab 01", "fleetlab demo", "the backend contract suite"."""
    return {"demo": "fleetlab demo", "contract": "the backend contract suite"}.get(subject, f"lab {subject}")


def dollars(usd: float) -> str:
    """$0 for nothing, $0.000042 under a cent, $1.25 from a cent on."""
    if usd == 0:
        return "$0"
    return f"${usd:.6f}" if usd < 0.01 else f"${usd:,.2f}"


def estimate(subject: str, *, counts: CallCounts | None = None, prices: dict[str, Any] | None = None) -> Estimate:
    """The estimate for ``subject`` from the recorded counts (or ``counts``) and the price file (or ``prices``)."""
    prices = prices if prices is not None else load_prices()
    measured = ""
    if counts is None:
        recorded = load_calls()
        entry = recorded["subjects"].get(subject)
        if entry is None:
            return Estimate(subject, (), 0, (), "", prices)
        counts = CallCounts.from_dict(entry)
        measured = f"{recorded['backend']} ({recorded['measured_on']}; `{recorded['generated_by']}` re-measures)"
    lines, not_billed, unknown = _price(counts, prices)
    return Estimate(subject, tuple(lines), not_billed, tuple(unknown), measured or "the counts given", prices)


def _price(counts: CallCounts, prices: dict[str, Any]) -> tuple[list[Line], int, list[str]]:
    """Priced lines (one per service and unit), calls AWS does not bill, and calls with no price."""
    totals: dict[tuple[str, str], list[float]] = {}
    priced_calls: set[str] = set()
    for rule in prices["prices"]:
        for operation in rule["operations"]:
            units, calls = _units(rule, operation, counts)
            priced_calls |= calls
            if units:
                units *= rule.get("units_per_count", 1)
                line = totals.setdefault((rule["service"], rule["unit"]), [0.0, 0.0])
                line[0] += units
                line[1] += units * rule["usd_per_million"] / 1e6
    lines = [Line(service, unit, units, usd) for (service, unit), (units, usd) in totals.items()]
    not_billed, unknown = 0, []
    for call, number in sorted(counts.calls.items()):
        if call in priced_calls:
            continue
        if _free(call, prices["not_billed"]):
            not_billed += number
        else:
            unknown.append(f"{number} x {call}")
    return lines, not_billed, unknown


def _free(call: str, not_billed: list[dict[str, Any]]) -> bool:
    """True when the price file lists ``call`` ("service.Operation") as one AWS does not bill."""
    service, operation = call.split(".", 1)
    return any(entry["service"] == service and ({"*", operation} & set(entry["operations"])) for entry in not_billed)


def _units(rule: dict[str, Any], operation: str, counts: CallCounts) -> tuple[float, set[str]]:
    """How many of ``rule``'s units ``operation`` used, and which recorded calls that prices."""
    if rule["counts"] == "transitions":
        return float(counts.transitions), set()
    # "service.Operation" names another service's call (an event that becomes a delivery)
    call_name = operation if "." in operation else f"{rule['service']}.{operation}"
    matching = {call for call in counts.calls
                if call == call_name or (operation == "*" and call.startswith(rule["service"] + "."))}
    if rule["counts"] == "items":
        return float(sum(counts.items.get(call, 0) for call in matching)), matching
    return float(sum(counts.calls[call] for call in matching)), matching




def require_opt_in(subject: str, *, say: Callable[[str], Any] = print) -> Estimate:
    """Before the ``aws`` backend makes anything for ``subject``: refuse with the estimate, or print it.

    Raises RealAwsRefused (its message opens with the estimate) unless
    ``FLEETLAB_ALLOW_REAL_AWS=1``; otherwise passes the estimate's text to ``say``.
    """
    found = estimate(subject)
    if not real_aws_allowed():
        raise real_aws_refused(found.text())
    say(found.text())
    return found


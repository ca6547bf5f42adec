"""Lab 07's governor figure: what the allowance's batch size buys (fewer writes, fewer conflicts) and what it
costs (quota left stranded). Titled, every axis labelled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from fleetlab.core.errors import InvalidInput
from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BATCH_ROW_KEYS = ("batch", "conflicts", "writes_per_call", "quota_use", "stranded_share")
"""What each row needs (``BatchSizeRow.as_dict()`` has them all)."""


def batch_size_tradeoff(rows: Sequence[Mapping[str, float]], *,
                        title: str = "The token governor: batch size against contention and quota use") -> Figure:
    """Two panels against batch size: conditional-write conflicts (and writes per call), then the share of
    the quota that paid for calls and the share stranded in unspent allowances.

    Raises InvalidInput naming ``rows`` when there are none or one lacks a key of ``BATCH_ROW_KEYS``.
    """
    if not rows:
        raise InvalidInput("rows", "needs at least one batch size's row")
    missing = sorted({key for row in rows for key in BATCH_ROW_KEYS if key not in row})
    if missing:
        raise InvalidInput("rows", f"every row needs {', '.join(BATCH_ROW_KEYS)}; missing {', '.join(missing)}")
    ordered = sorted(rows, key=lambda row: row["batch"])
    batches = [row["batch"] for row in ordered]
    figure = _new_figure(10, 3.8)
    contention, use = figure.subplots(1, 2)
    figure.suptitle(title)

    contention.plot(batches, [row["conflicts"] for row in ordered], marker="o", color="C3", label="conflicts")
    contention.set_xscale("log")
    contention.set_xlabel("batch size (tokens per draw)")
    contention.set_ylabel("conditional-write conflicts")
    contention.set_title("Contention on the counter")
    per_call = contention.twinx()
    per_call.plot(batches, [row["writes_per_call"] for row in ordered], marker="s", linestyle="--", color="C0",
                  label="writes per call")
    per_call.set_ylabel("counter writes per model call")
    lines = contention.get_lines() + per_call.get_lines()
    contention.legend(lines, [line.get_label() for line in lines], loc="upper right", fontsize=8)

    use.plot(batches, [row["quota_use"] for row in ordered], marker="o", color="C2", label="spent on calls")
    use.plot(batches, [row["stranded_share"] for row in ordered], marker="^", color="C1",
             label="stranded in allowances")
    use.set_xscale("log")
    use.set_ylim(0, 1.05)
    use.set_xlabel("batch size (tokens per draw)")
    use.set_ylabel("share of the window's quota")
    use.set_title("Where the quota went")
    use.legend(loc="center left", fontsize=8)
    for axes in (contention, use):
        axes.set_xticks(batches, [str(batch) for batch in batches])
    figure.tight_layout()
    return figure

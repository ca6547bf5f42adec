"""Lab 07's figures: one conversation's waterfall across every hop, the chaos day's dashboard, and the
token governor's batch size against contention and quota use. Titled, every axis labelled."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fleetlab.core.errors import InvalidInput
from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fleetlab.core.tracing import Hop

HOP_LAYERS = {
    "published": "bus and rule",
    "received": "queue to worker",
    "claimed": "idempotency store",
    "duplicate_suppressed": "idempotency store",
    "model_failed": "model and router",
    "effect": "model and router",
    "completed": "response to the caller",
    "parked": "response to the caller",
    "deleted": "queue (delete)",
    "delete_failed": "queue (delete)",
    "crashed": "fault",
    "failed": "fault",
    "busy": "fault",
}
"""Which part of the fleet each hop of the day's traces belongs to (others: "other")."""
LAYER_ORDER = ("bus and rule", "queue to worker", "idempotency store", "model and router",
               "response to the caller", "queue (delete)", "fault", "other")
LAYER_MARKERS = {"bus and rule": ("o", 7), "queue to worker": ("s", 9), "idempotency store": ("D", 5),
                 "model and router": ("^", 7), "response to the caller": ("P", 8), "queue (delete)": ("v", 7),
                 "fault": ("x", 9), "other": (".", 6)}
"""Each layer's marker and size: distinct shapes, so hops at the same moment stay visible."""
HANDLING_ENDS = ("deleted", "delete_failed", "failed", "crashed", "busy")
ERROR_BINS = 24
BATCH_ROW_KEYS = ("batch", "conflicts", "writes_per_call", "quota_use", "stranded_share")
"""What each row needs (``BatchSizeRow.as_dict()`` has them all)."""


def conversation_waterfall(traces: Mapping[str, Sequence[Hop]], conversation: str) -> Figure:
    """Every step of ``conversation`` (trace ids ``<conversation>-step-<k>``): one row per step, a grey bar while it
    waited on the queue, a coloured bar while a worker held it, a marker per hop coloured by the part of the
    fleet that recorded it. Time in minutes since the conversation's first event.

    Raises InvalidInput naming ``conversation`` when no trace belongs to it.
    """
    steps = sorted((trace for trace in traces if trace.startswith(f"{conversation}-step-")),
                   key=lambda trace: int(trace.rsplit("-", 1)[1]))
    if not steps:
        raise InvalidInput("conversation", f"no trace of {conversation!r} among the day's traces",
                           hint="a conversation is named conv-<n>, as in conv-3-step-1")
    start = min(hop.at for trace in steps for hop in traces[trace])
    end = max(hop.at for trace in steps for hop in traces[trace])
    figure = _new_figure(10, 0.7 * len(steps) + 2.2)
    axes = figure.add_subplot()
    colours = {layer: f"C{index}" for index, layer in enumerate(LAYER_ORDER)}
    colours["fault"] = "black"
    seen: dict[str, Any] = {}
    for row, trace in enumerate(steps):
        hops = traces[trace]
        for begin, finish, held in _spans(hops):
            axes.barh(row, (finish - begin) / 60, left=(begin - start) / 60, height=0.5,
                      color="C0" if held else "lightgrey", alpha=0.35 if held else 0.8)
        for hop in hops:
            layer = HOP_LAYERS.get(hop.name, "other")
            marker, size = LAYER_MARKERS[layer]
            seen[layer] = axes.plot([(hop.at - start) / 60], [row], marker, markersize=size, color=colours[layer],
                                    label=layer, linestyle="none")[0]
    axes.set_yticks(range(len(steps)), [trace.removeprefix(f"{conversation}-") for trace in steps])
    axes.invert_yaxis()
    minutes = max((end - start) / 60, 1.0)
    axes.set_xlim(-0.02 * minutes, 1.04 * minutes)
    axes.set_xlabel(f"minutes since {conversation}'s first event (grey: waiting on the queue; blue: held by a worker)")
    axes.set_ylabel("step")
    axes.set_title(f"{conversation}: every hop of every step, from the bus to the caller's answer")
    ordered = [layer for layer in LAYER_ORDER if layer in seen]
    axes.legend([seen[layer] for layer in ordered], ordered, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    figure.tight_layout()
    return figure


def _spans(hops: Sequence[Hop]) -> list[tuple[float, float, bool]]:
    """(begin, end, held) spans of one trace: waiting from a publish (or a handling that gave the message back)
    to the next receive; held by each worker from its receive to its handling's end (a delete, a failure, a
    crash or a lease conflict). Two workers may hold the same step at once."""
    spans: list[tuple[float, float, bool]] = []
    holding: dict[str, float] = {}  # worker -> when it received the step
    waiting_since: float | None = None
    for hop in hops:
        if hop.name == "published" and waiting_since is None and not holding:
            waiting_since = hop.at
        elif hop.name == "received":
            if waiting_since is not None:
                spans.append((waiting_since, hop.at, False))
                waiting_since = None
            holding[hop.component] = hop.at
        elif hop.name in HANDLING_ENDS and hop.component in holding:
            spans.append((holding.pop(hop.component), hop.at, True))
            if hop.name != "deleted" and not holding:
                waiting_since = hop.at
    return spans


def day_dashboard(samples: Sequence[Any], *, title: str = "The chaos day") -> Figure:
    """Four panels over the day's hours: steps waiting, replicas per queue (each sample's count held over the
    round before it), the age of the oldest unfinished step, and errors by class (stacked, in ``ERROR_BINS``
    slices of the day). ``samples`` are ``DaySample``s (``Scoreboard.samples``).

    Raises InvalidInput naming ``samples`` when there are none.
    """
    if not samples:
        raise InvalidInput("samples", "needs at least one sample of the day (Scoreboard.samples)")
    hours = [sample.at / 3600 for sample in samples]
    figure = _new_figure(11, 6.5)
    (depth, replicas), (age, errors) = figure.subplots(2, 2, sharex=True)
    figure.suptitle(title)
    depth.plot(hours, [sample.waiting for sample in samples], color="C0")
    depth.set_ylabel("steps waiting or in flight")
    depth.set_title("Queue depth")
    replicas.plot(hours, [sample.replicas for sample in samples], color="C1", drawstyle="steps-pre")
    replicas.set_ylabel("replicas per queue")
    replicas.set_title("Replicas (the autoscaler)")
    age.plot(hours, [sample.oldest_age / 60 for sample in samples], color="C2")
    age.set_ylabel("minutes")
    age.set_title("Age of the oldest unfinished step")
    _errors_by_class(errors, samples)
    for axes in (age, errors):
        axes.set_xlabel("hours into the day (virtual clock)")
    figure.tight_layout()
    return figure


def _errors_by_class(axes: Any, samples: Sequence[Any]) -> None:
    """Errors by class, stacked bars in equal slices of the day."""
    end = max(sample.at for sample in samples) or 1.0
    width = end / ERROR_BINS
    by_class: dict[str, Counter[int]] = {}
    for sample in samples:
        slot = min(int(sample.at / width), ERROR_BINS - 1)
        for kind, count in sample.errors.items():
            by_class.setdefault(kind, Counter())[slot] += count
    lefts = [slot * width / 3600 for slot in range(ERROR_BINS)]
    bottom = [0] * ERROR_BINS
    for kind in sorted(by_class):
        heights = [by_class[kind][slot] for slot in range(ERROR_BINS)]
        axes.bar(lefts, heights, width=width / 3600, bottom=bottom, align="edge", label=kind)
        bottom = [low + high for low, high in zip(bottom, heights, strict=True)]
    axes.set_ylabel("handlings that ended badly")
    axes.set_title("Errors by class")
    if by_class:
        axes.legend(fontsize=7, loc="upper right")


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

"""Lab 03's figures: a DLQ by failure class, and how far each FIFO message group got."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fleetlab.services.sqs.groups import GroupProgress


def failure_classes(counts: Mapping[str, int], *, title: str = "Parked records by failure class") -> Figure:
    """One bar per ERROR_CODE, largest first: the first question of a triage."""
    figure = _new_figure(7, 3.2)
    axes = figure.add_subplot()
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    labels = [name for name, _ in ranked]
    axes.bar(labels, [count for _, count in ranked], color=[f"C{i}" for i in range(len(ranked))])
    for x, (_, count) in enumerate(ranked):
        axes.annotate(str(count), (x, count), ha="center", va="bottom", fontsize=9)
    axes.set_title(title)
    axes.set_xlabel("failure class (the ERROR_CODE message attribute)")
    axes.set_ylabel("records in the DLQ")
    axes.margins(y=0.2)
    figure.tight_layout()
    return figure


def group_progress(progress: GroupProgress, *, at: float | None = None) -> Figure:
    """Steps finished per FIFO message group against time; a line at ``at`` seconds.

    Groups that progress alike would hide one another: each line is nudged up a little and drawn in its own style.
    """
    figure = _new_figure(9, 3.4)
    axes = figure.add_subplot()
    end = progress.horizon / 60
    styles = ("-", "--", "-.", ":")
    for index, (group, times) in enumerate(progress.finished.items()):
        xs = [0.0] + [t / 60 for t in times] + [end]
        ys = [n + 0.07 * index for n in [0, *range(1, len(times) + 1), len(times)]]
        axes.step(xs, ys, where="post", color=f"C{index}", label=group, linewidth=2,
                  linestyle=styles[index % len(styles)])
    if progress.parked_at is not None:
        axes.axvline(progress.parked_at / 60, color="black", linestyle=(0, (1, 3)), label=f"{progress.stuck} parked")
    if at is not None:
        axes.axvline(at / 60, color="C3", linewidth=1, label="now")
    axes.set_title(f"{progress.stuck} is stuck: its group waits, the others do not")
    axes.set_xlabel("minutes since the steps were sent")
    axes.set_ylabel("steps finished")
    axes.set_ylim(0, progress.steps + 0.5)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    figure.tight_layout()
    return figure

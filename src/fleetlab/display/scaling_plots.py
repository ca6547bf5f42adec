"""Figures for lab 05: a fleet over time, and a knob against latency and cost. Titled, every axis labelled.

``fleet_timeline`` draws any run with ``samples`` (the simulator's
``FleetRun`` and the real loop's ``RealLoopRun`` share the ``Sample`` row), so
the small real run and the fleet-scale model read the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fleetlab.display.plots import _new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fleetlab.composition.scaling.tradeoff import TradeOff


def _time_axis(seconds: float) -> tuple[float, str]:
    """A divisor and a label that keep the time axis readable."""
    if seconds > 6 * 3600:
        return 3600.0, "hours since the start"
    if seconds > 1200:
        return 60.0, "minutes since the start"
    return 1.0, "seconds since the start"


def fleet_timeline(run: Any, *, title: str = "A fleet scaled by KEDA and the HPA",
                   max_replicas: int | None = None) -> Figure:
    """Three panels over time: queue depth (visible, in flight), replicas, age of the oldest message."""
    samples = run.samples
    figure = _new_figure(9, 7.5)
    depth, pods, age = figure.subplots(3, 1, sharex=True)
    figure.suptitle(title)
    if not samples:
        depth.set_title("No samples recorded")
        return figure
    scale, label = _time_axis(samples[-1].t - samples[0].t)
    t = [s.t / scale for s in samples]
    depth.plot(t, [s.visible for s in samples], label="visible (waiting)", color="C0")
    depth.plot(t, [s.in_flight for s in samples], label="in flight (not visible)", color="C1")
    if any(s.delayed for s in samples):
        depth.plot(t, [s.delayed for s in samples], label="delayed", color="C4")
    depth.set_ylabel("messages")
    depth.set_title("Queue depth, as the scaler reads it")
    depth.legend(loc="upper right", fontsize=8)
    pods.step(t, [s.replicas for s in samples], where="post", label="replicas requested", color="C2")
    pods.step(t, [s.ready for s in samples], where="post", label="replicas ready", color="C2", linestyle=":")
    if max_replicas is not None:
        pods.axhline(max_replicas, color="C3", linestyle="--", linewidth=1, label=f"maxReplicaCount {max_replicas}")
    pods.set_ylabel("replicas")
    pods.set_title("Replicas set by KEDA (0 <-> 1) and the HPA (1 <-> N)")
    pods.legend(loc="upper right", fontsize=8)
    age.plot(t, [s.age_of_oldest for s in samples], color="C5")
    age.set_ylabel("seconds")
    age.set_xlabel(label)
    age.set_title("Age of the oldest undeleted message (ApproximateAgeOfOldestMessage)")
    figure.tight_layout()
    return figure


def tradeoff_curve(knob: str, values: Sequence[float], results: Sequence[TradeOff]) -> Figure:
    """p95 step latency and pod-hours against one knob (queueLength, step time, ...), on twin axes."""
    figure = _new_figure(8, 4)
    latency = figure.add_subplot()
    latency.plot(values, [r.p95_latency for r in results], "o-", color="C0", label="p95 step latency")
    latency.set_xlabel(knob)
    latency.set_ylabel("p95 step latency (s)", color="C0")
    cost = latency.twinx()
    cost.plot(values, [r.pod_hours for r in results], "s--", color="C3", label="pod-hours")
    cost.set_ylabel("pod-hours", color="C3")
    latency.set_title(f"{knob}: latency against cost")
    figure.tight_layout()
    return figure

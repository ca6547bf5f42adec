"""Tables for lab 05: a ScaledObject's settings, who scaled when and why, runs side by side, a fleet's arithmetic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetlab.composition.scaling.capacity import IN_FLIGHT_CAP, PUT_EVENTS_ENTRIES, Capacity
from fleetlab.composition.scaling.manifest import ScaledObject
from fleetlab.display.tables import Table

_SETTINGS = (  # (label, manifest key, where it lives, attribute)
    ("queueLength", "queueLength", "trigger", "queue_length"),
    ("activationQueueLength", "activationQueueLength", "trigger", "activation_queue_length"),
    ("scaleOnInFlight", "scaleOnInFlight", "trigger", "scale_on_in_flight"),
    ("scaleOnDelayed", "scaleOnDelayed", "trigger", "scale_on_delayed"),
    ("pollingInterval (s)", "pollingInterval", "spec", "polling_interval"),
    ("cooldownPeriod (s)", "cooldownPeriod", "spec", "cooldown_period"),
    ("minReplicaCount", "minReplicaCount", "spec", "min_replica_count"),
    ("maxReplicaCount", "maxReplicaCount", "spec", "max_replica_count"),
)


def settings(scaled: ScaledObject) -> Table:
    """What KEDA scales on: each setting, its value, and whether the manifest set it or KEDA's default did."""
    spec = scaled.source.get("spec", {})
    metadata = (spec.get("triggers") or [{}])[0].get("metadata", {})
    rows = []
    for label, key, where, attribute in _SETTINGS:
        written = key in (metadata if where == "trigger" else spec)
        value = getattr(scaled.trigger if where == "trigger" else scaled, attribute)
        rows.append({"setting": label, "value": str(value).lower() if isinstance(value, bool) else value,
                     "from": "the manifest" if written else "KEDA's default"})
    return Table(rows, title=f"ScaledObject {scaled.name}")


def decisions(run: Any, *, title: str = "Who scaled the fleet, when, and why") -> Table:
    """Every change KEDA or the HPA made in a run, with its reason."""
    rows = [{"at (s)": decision.at, "by": decision.actor, "replicas": f"{decision.current} -> {decision.desired}",
             "why": decision.reason()} for decision in run.decisions if decision.changed]
    return Table(rows, title=title)


def side_by_side(runs: Mapping[str, Any], *, at: float) -> Table:
    """Real-loop runs of the same documents, one row each: what they had done by ``at`` seconds."""
    rows = []
    for label, run in runs.items():
        then = max((s for s in run.samples if s.t <= at), key=lambda s: s.t)
        rows.append({"scaler counts": label, f"replicas at +{at:g} s": then.replicas,
                     f"in flight at +{at:g} s": then.in_flight, "documents done": len(run.ledger.effects()),
                     "steps killed mid-work": run.abandoned})
    seconds = max(run.seconds for run in runs.values())
    return Table(rows, title=f"The same documents, {len(runs)} ScaledObjects, after {seconds:g} s")


def fleet_arithmetic(cap: Capacity) -> Table:
    """A fleet's figures from Little's law and the calls each step makes."""
    rows = [
        ("steps per minute", f"{cap.steps_per_minute:,.0f}"),
        ("steps in flight (Little's law)", f"{cap.in_flight_steps:,.0f}"),
        ("share of a standard queue's in-flight cap", f"{cap.in_flight_share:.1%} of {IN_FLIGHT_CAP:,}"),
        ("SQS calls (receive + delete)", f"{cap.sqs_calls_per_second:,.0f}/s, {cap.sqs_calls_per_day:,.0f}/day"),
        ("completion events", f"{cap.completion_events_per_day:,.0f}/day"),
        (f"PutEvents requests ({PUT_EVENTS_ENTRIES} entries each)", f"{cap.put_events_requests_per_day:,.0f}/day"),
        ("idempotency writes", f"{cap.idempotency_writes_per_day:,.0f}/day"),
        ("SendTaskSuccess", f"{cap.callbacks_per_second:,.0f}/s against a refill of "
                            f"{cap.callback_refill_per_second:,.0f}/s ({cap.callback_headroom:.0f}x headroom)"),
    ]
    title = (f"{cap.conversations_per_minute:,.0f} conversations/min x {cap.steps_per_conversation} steps "
             f"of {cap.step_seconds:g} s")
    return Table([{"figure": name, "value": value} for name, value in rows], title=title)


def bill(lines: Mapping[str, float], *, title: str) -> Table:
    """A day's bill by line, and its total, in US dollars."""
    rows = [{"line": line, "dollars a day": f"{dollars:,.2f}"} for line, dollars in lines.items()]
    rows.append({"line": "total", "dollars a day": f"{sum(lines.values()):,.2f}"})
    return Table(rows, title=title)

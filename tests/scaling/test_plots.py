"""Lab 05's figures: every panel titled, every axis labelled, the data drawn."""

from __future__ import annotations

from fleetlab.composition.scaling.simulator import Pods, Workload, simulate
from fleetlab.composition.scaling.tradeoff import latency_and_cost
from fleetlab.display.scaling_plots import fleet_timeline, tradeoff_curve

from .builders import so


def assert_labelled(axes) -> None:
    assert axes.get_title() and axes.get_ylabel()


def test_the_fleet_timeline_draws_depth_replicas_and_age():
    run = simulate(so(queue_length=5), Workload(bursts=((0, 100),)), Pods(90, 5), seconds=600)
    figure = fleet_timeline(run, max_replicas=20)
    depth, pods, age = figure.axes
    for axes in figure.axes:
        assert_labelled(axes)
    assert figure._suptitle.get_text()
    assert age.get_xlabel() == "seconds since the start"
    assert max(depth.lines[1].get_ydata()) == 100  # in flight peaks at the burst
    assert max(pods.lines[0].get_ydata()) == 20
    assert max(age.lines[0].get_ydata()) == 120


def test_a_long_run_is_drawn_in_hours():
    run = simulate(so(queue_length=10), Workload(20, 3), Pods(90, 10), seconds=8 * 3600, dt=5, sample_every=300)
    assert fleet_timeline(run).axes[2].get_xlabel() == "hours since the start"


def test_the_trade_off_curve_has_two_labelled_axes():
    values = [2, 5, 10]
    results = [latency_and_cost(queue_length=v, minutes=15) for v in values]
    figure = tradeoff_curve("queueLength", values, results)
    latency, cost = figure.axes
    assert_labelled(latency) and latency.get_xlabel() == "queueLength"
    assert cost.get_ylabel() == "pod-hours"
    assert list(latency.lines[0].get_xdata()) == values

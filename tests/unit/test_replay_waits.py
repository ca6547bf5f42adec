"""Waiting for a replay: it ends COMPLETED, FAILED, or not in time (a stub DescribeReplay, a real clock)."""

import datetime as dt

import pytest

from fleetlab.core.clock import RealClock
from fleetlab.core.errors import ReplayFailed, Timeout
from fleetlab.services.events.replay import wait_for_replay

WINDOW = {"EventStartTime": dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc),
          "EventEndTime": dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc)}


class StubEvents:
    """DescribeReplay answering the given states in turn, then the last one forever."""

    def __init__(self, *states, reason=""):
        self.states = list(states)
        self.reason = reason
        self.calls = 0

    def describe_replay(self, ReplayName):
        self.calls += 1
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"ReplayName": ReplayName, "State": state, "StateReason": self.reason, **WINDOW}


def test_the_wait_returns_once_the_replay_completes():
    events = StubEvents("STARTING", "RUNNING", "COMPLETED")
    replay = wait_for_replay(events, "r1", RealClock(), timeout=5, interval=0.01)
    assert replay.state == "COMPLETED" and events.calls == 3
    assert replay.window == (WINDOW["EventStartTime"].timestamp(), WINDOW["EventEndTime"].timestamp())


def test_a_failed_replay_raises_with_its_reason_and_may_have_delivered_some_events():
    with pytest.raises(ReplayFailed) as raised:
        wait_for_replay(StubEvents("RUNNING", "FAILED", reason="archive deleted"), "r2", RealClock(), interval=0.01)
    assert "archive deleted" in str(raised.value) and raised.value.may_have_happened


def test_a_replay_still_running_at_the_timeout_raises_and_may_be_running():
    with pytest.raises(Timeout) as raised:
        wait_for_replay(StubEvents("RUNNING"), "r3", RealClock(), timeout=0.05, interval=0.01)
    assert "replay r3" in str(raised.value) and raised.value.may_have_happened

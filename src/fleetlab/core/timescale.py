"""Lab time on a real clock: the scaled clock of LocalStack and real AWS.

Every number in a lab is *lab time*. On moto it is the virtual clock; where
the services keep their own time, ``ScaledClock`` runs lab time ``scale``
times faster than real time (``FLEETLAB_TIME_SCALE``, see ``settings``; default 60: one lab
minute per real second), and the backend's clients convert the durations the
services enforce (``aws.servicetime``). So a 900 s visibility timeout is 15
real seconds, and a lab written for the virtual clock runs unchanged.

* ``now()`` is lab time: it starts at the real time and runs ``scale`` times
  faster; ``lab_time(epoch)`` maps a service's timestamp onto it.
* ``sleep(d)`` waits ``d / scale`` real seconds, firing the caller's
  ``every`` callbacks at their lab instants, as the virtual clock does. A
  sleep that would take more than ``jump_after`` real seconds waits that
  long, then *jumps*: lab time moves on at once by the rest (the library's
  own time: model steps, leases, windows), and the services see only the
  part that ran. Timers due in the jumped part still fire, in order. The
  first jump in a process prints one line saying so.
* ``run_together`` runs real threads; ``wait_until`` waits real seconds.
* With a ``meter`` attached (the check runner's), every wait of a thread
  taking part is counted, so a check's time limit applies to the learner's
  code, not to the backend's waits.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from fleetlab.core.clock import REAL_TOLERANCE, WAIT_SLICE, Every, RealClock, Timers
from fleetlab.core.errors import InvalidInput

DEFAULT_SCALE = 60
SCALES = tuple(n for n in range(1, 61) if 60 % n == 0)
"""The scales allowed: those dividing 60, so a lab duration in whole minutes is whole seconds of service time."""

JUMP_AFTER = 20.0
"""Real seconds one sleep runs at most; the rest of it jumps."""

_announced = threading.Event()  # the first jump in this process has been announced


def describe_scale(scale: int) -> str:
    """How a real clock runs, in the banner's words: ``real, scaled x60: a lab minute passes in one real second; ...``."""
    if scale == 1:
        return "real: every wait takes its full length"
    per_minute = "one real second" if scale == 60 else f"{60 // scale} real seconds"
    return f"real, scaled x{scale}: a lab minute passes in {per_minute}; service timers scaled to match"


def announce_first_jump(seconds: float, ran: float) -> None:
    """Print, once per process, that a ``seconds`` sleep ran ``ran`` lab seconds for real and then jumped."""
    if _announced.is_set():
        return
    _announced.set()
    from fleetlab.core.units import duration

    seconds, ran = round(seconds), round(ran)
    print(
        f"clock: this {duration(seconds)} wait runs its first {duration(ran)} in real time, then jumps: "
        "the library's own time (model steps, leases, idempotency windows) moves on at once, "
        f"the services see only the first {duration(ran)} (docs/fidelity.md#time explains it; said once)"
    )


class ScaledClock(RealClock):
    """Real time with lab time running ``scale`` times faster (see the module docstring)."""

    virtual = False

    def __init__(
        self,
        scale: int = DEFAULT_SCALE,
        *,
        jump_after: float = JUMP_AFTER,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep,
        announce: Callable[[float, float], None] = announce_first_jump,
    ) -> None:
        super().__init__(monotonic=monotonic, pause=pause)
        if scale not in SCALES:
            raise InvalidInput("scale", f"{scale} does not divide 60", hint=f"use one of {SCALES}")
        self.scale = scale
        self.tolerance = REAL_TOLERANCE * scale
        self.jump_after = jump_after
        self._wall = wall
        self._origin = wall()
        self._jumps: list[tuple[float, float]] = []  # (real epoch of the jump, lab seconds jumped)
        self._jumped = 0.0
        self._timers = Timers()
        self._announce = announce

    def now(self) -> float:
        """Lab time: the real time this clock started, plus ``scale`` times the real time since, plus jumps."""
        return self._origin + (self._wall() - self._origin) * self.scale + self._jumped

    def lab_time(self, epoch: float) -> float:
        """The lab time of the real instant ``epoch`` (a service's timestamp)."""
        jumped = sum(amount for at, amount in list(self._jumps) if at <= epoch)
        return self._origin + (epoch - self._origin) * self.scale + jumped

    def service_time(self, lab: float) -> float:
        """The real instant whose lab time is ``lab`` (the inverse of ``lab_time``)."""
        jumped = 0.0
        for at, amount in list(self._jumps):
            before = self._origin + (at - self._origin) * self.scale + jumped
            if lab < before:
                break
            if lab <= before + amount:  # inside a jump: all of its lab instants are one real instant
                return at
            jumped += amount
        return self._origin + (lab - self._origin - jumped) / self.scale

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` of lab time pass: ``seconds / scale`` real seconds, at most ``jump_after``, then a jump."""
        seconds = max(seconds, 0.0)
        real = min(seconds, self.jump_after * self.scale)
        if real < seconds:
            self._announce(seconds, real)
        self._pass(seconds, real=real)

    def skip(self, seconds: float) -> None:
        """Let ``seconds`` of lab time pass for the library only: one jump, no real wait (timers still fire)."""
        self._pass(max(seconds, 0.0), real=0.0)

    def _pass(self, seconds: float, *, real: float) -> None:
        """Move lab time on by ``seconds``, the first ``real`` of them in real time, firing this thread's timers."""
        start = self.now()
        target, real_until = start + seconds, start + real
        while (timer := self._timers.next_due(before=target)) is not None:
            self._pass_until(timer.when, real_until)
            timer.fn()
        self._pass_until(target, real_until)

    def every(self, interval: float, fn: Callable[[], None]) -> Every:
        """Call ``fn`` every ``interval`` lab seconds while the calling thread sleeps on this clock."""
        return self._timers.every(interval, fn, now=self.now())

    def _pass_until(self, when: float, real_until: float) -> None:
        """Wait in real time up to ``min(when, real_until)``; jump the rest of the way to ``when``."""
        with self._waiting():
            while (left := min(when, real_until) - self.now()) > 0:
                self._pause(min(WAIT_SLICE, left / self.scale))
        ahead = when - self.now()
        if ahead > 0:
            self._jump(ahead)

    def _jump(self, seconds: float) -> None:
        with self._guard:
            self._jumps.append((self._wall(), seconds))
            self._jumped += seconds

    def _actor_ended(self) -> None:
        self._timers.drop(threading.get_ident())  # a timer the task leaked dies with its thread
        super()._actor_ended()


def service_seconds(lab_seconds: float, scale: int) -> int:
    """Whole seconds of service time for ``lab_seconds``: rounded up, at least 1 when positive."""
    if lab_seconds <= 0:
        return 0
    return max(1, math.ceil(lab_seconds / scale - 1e-9))

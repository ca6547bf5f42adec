"""The library's own time on a real-clock backend: an OffsetClock jumps; a virtual clock is used as it is."""

import time

from fleetlab.backends.backend import open_backend
from fleetlab.composition.topology import experiment_table, new_prefix
from fleetlab.core.clock import OffsetClock, RealClock, library_clock
from fleetlab.services.state.idempotency import Claim, Completed, IdempotencyStore


def test_an_offset_clock_jumps_on_sleep_and_otherwise_follows_wall_time():
    clock = OffsetClock()
    before = time.time()
    clock.sleep(7 * 86_400)
    assert clock.now() - before >= 7 * 86_400
    assert time.time() - before < 60  # no real time passed


def test_the_library_clock_is_the_backends_own_when_virtual_and_an_offset_clock_when_real():
    assert isinstance(library_clock(RealClock()), OffsetClock)
    backend = open_backend("moto")
    try:
        assert library_clock(backend.clock) is backend.clock
    finally:
        backend.close()


def test_an_idempotency_record_expires_on_the_offset_clock():
    backend = open_backend("moto")
    try:
        with experiment_table(backend, new_prefix("ut")) as table:
            clock = OffsetClock()
            store = IdempotencyStore(backend.client("dynamodb"), table, clock, lease_seconds=60, window_seconds=86_400)
            store.complete(store.claim("step-1", "results"), "saved")
            assert isinstance(store.claim("step-1", "results"), Completed)
            clock.sleep(2 * 86_400)
            assert isinstance(store.claim("step-1", "results"), Claim)
    finally:
        backend.close()


def test_an_offset_clock_over_a_scaled_clock_follows_lab_time_and_jumps_alone():
    from fleetlab.core.timescale import ScaledClock

    wall = [1_000.0]
    backend_clock = ScaledClock(60, wall=lambda: wall[0], pause=lambda s: None)
    clock = library_clock(backend_clock)
    assert isinstance(clock, OffsetClock) and clock.scale == 60
    wall[0] += 1.0  # one real second is a lab minute for both
    assert clock.now() == backend_clock.now() == 1_060.0
    clock.sleep(86_400)
    assert clock.now() == 1_060.0 + 86_400
    assert backend_clock.now() == 1_060.0  # the backend's clock (and every service time mapped by it) never jumped

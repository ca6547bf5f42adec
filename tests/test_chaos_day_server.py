"""The seeded 1,000-step chaos day on moto's server holds every invariant, as on in-process moto.

A module of its own: one virtual clock per process, so moto-server opens only once test_chaos_day's moto is closed.
"""

from test_chaos_day import SEED, STEPS, assert_every_invariant_held

from fleetlab.backends.backend import open_backend
from fleetlab.composition import ChaosSchedule, FleetConfig, run_chaos_day


def test_a_seeded_chaos_day_on_moto_server_holds_every_invariant():
    backend = open_backend("moto-server")
    try:
        board = run_chaos_day(backend, FleetConfig(), ChaosSchedule.draw(SEED, STEPS))
    finally:
        backend.close()
    assert_every_invariant_held(board)
    assert board.broken() == []
    # a guard against a day gone quadratic, not a speed goal (`fleetlab bench` measures speed): it took
    # 35 s on a quiet machine and 139 s while other work kept the two cores' load at 9
    assert board.counts.run_seconds < 600

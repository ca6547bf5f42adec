import gc

import pytest

from fleetlab.core.collector import LONG_RUN_THRESHOLDS, fewer_collections


def test_fewer_collections_raises_the_thresholds_inside_and_puts_back_the_ones_found_even_on_error():
    found = gc.get_threshold()
    assert found != LONG_RUN_THRESHOLDS
    with pytest.raises(ValueError), fewer_collections():
        assert gc.get_threshold() == LONG_RUN_THRESHOLDS
        raise ValueError("the run failed")
    assert gc.get_threshold() == found

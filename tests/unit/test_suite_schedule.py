"""The suite's own scheduling table names scopes that exist, so a renamed module cannot silently drop out of it."""

from pathlib import Path

from tests.conftest import LONGEST_FIRST, SPLIT_BY_LAB

ROOT = Path(__file__).resolve().parents[2]


def test_every_long_scope_is_a_module_of_the_suite():
    for scope in LONGEST_FIRST:
        module, _, lab = scope.partition("::")
        assert (ROOT / module).is_file(), f"LONGEST_FIRST names {module}, which does not exist"
        assert not lab or module == SPLIT_BY_LAB, f"only {SPLIT_BY_LAB} is split by lab, not {module}"

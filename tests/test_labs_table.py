"""The table of labs (``fleetlab.course.labs``) matches the tree, the notebooks and the check registry."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from fleetlab.core.errors import InvalidInput
from fleetlab.course import labs
from fleetlab.course.grading import registry

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "fleetlab"


def modules_of(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}


def owners(kind: str, module: str) -> list[str]:
    return [row.id for row in labs.LABS if module in getattr(row, kind)]


def test_every_part_of_every_lab_exists():
    missing = [path for row in labs.LABS for paths in row.parts().values() for path in paths
               if not (REPO / path).exists()]
    assert missing == []



def test_every_module_the_table_names_imports():
    for row in labs.LABS:
        named = (*row.check_modules, *row.instructor_check_modules, *row.experiment_modules, *row.display_modules,
                 *([row.composition_package] if row.composition else []))
        for module in named:
            assert importlib.import_module(module).__name__ == module

def test_the_table_has_one_row_per_shipped_lab_in_order():
    assert [row.id for row in labs.LABS] == registry.shipped_labs()


def test_each_labs_checks_are_the_ones_the_registry_holds_for_it():
    for row in labs.LABS:
        registered = registry.checks_of(row.id)
        assert row.check_ids == tuple(check.id for check in registered), row.id
        assert row.check_modules == tuple(check.harness.__module__ for check in registered), row.id


@pytest.mark.parametrize("kind, folder", [("experiments", "course/experiments"), ("display", "display")])
def test_every_lesson_module_belongs_to_exactly_one_lab(kind, folder):
    shared = set(labs.SHARED_DISPLAY) if kind == "display" else set()
    assert shared <= modules_of(PACKAGE / folder), "a shared module the table names is not in the tree"
    for module in sorted(modules_of(PACKAGE / folder) - shared):
        assert len(owners(kind, module)) == 1, f"{folder}/{module}.py belongs to labs {owners(kind, module)}"
    assert not {module for module in shared if owners(kind, module)}, "a shared module is no lab's own"


def test_every_composition_package_of_a_lesson_belongs_to_exactly_one_lab():
    packages = {p.parent.name for p in (PACKAGE / "composition").glob("*/__init__.py")}
    assert packages == {row.composition for row in labs.LABS if row.composition}
    assert len(packages) == sum(1 for row in labs.LABS if row.composition)


def test_a_lessons_modules_carry_its_name_in_every_layer():
    for row in labs.LABS:
        for module in (*row.experiments, *row.display, *([row.composition] if row.composition else [])):
            assert module == row.name or module.startswith(f"{row.name}_"), f"lab {row.id}: {module} is not {row.name}"
    assert len({row.name for row in labs.LABS}) == len(labs.LABS), "two labs share a name"


def test_each_title_is_the_instructor_notebooks_heading():
    for row in labs.LABS:
        cells = json.loads((REPO / row.instructor_notebook).read_text())["cells"]
        heading = "".join(next(cell for cell in cells if cell["cell_type"] == "markdown")["source"]).splitlines()[0]
        assert heading == f"# Lab {row.id} · {row.title}"


@pytest.mark.parametrize("given", ["05", "5", 5, " 5 "])
def test_a_lab_is_found_by_its_number_as_written(given):
    assert labs.lab(given).experiment_modules == ("fleetlab.course.experiments.scaling",)


@pytest.mark.parametrize("given", ["08", "scaling", None])
def test_an_unknown_lab_is_refused_naming_the_field_and_the_labs(given):
    with pytest.raises(InvalidInput) as refused:
        labs.lab(given)
    assert refused.value.field == "lab"
    assert "00, 01, 02, 03, 04, 05, 06, 07" in str(refused.value)

"""Every lab declares its main widget, and a malformed declaration is named (no browser needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from main_widget import DeclarationError, declared_main_widget

REPO_ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((REPO_ROOT / "labs").glob("*.ipynb"))


@pytest.mark.parametrize("path", LABS, ids=lambda path: path.stem)
def test_every_lab_declares_one_main_widget(path: Path) -> None:
    declared = declared_main_widget(path)
    cells = [cell for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    assert "fleetlab" in cells[declared.cell_index]["metadata"]


def test_there_are_labs_to_cover() -> None:
    assert LABS, "no notebooks in labs/: the browser test would cover nothing"


def notebook_with(tmp_path: Path, *metadata: dict) -> Path:
    """A notebook file: a plain code cell, then one code cell per metadata given."""
    cells = [{"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None}]
    cells += [{"cell_type": "code", "metadata": m, "source": "w", "outputs": [], "execution_count": None}
              for m in metadata]
    path = tmp_path / "lab.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def declaring(**fields: object) -> dict:
    return {"fleetlab": {"main_widget": fields}}


def test_a_declaration_is_read_with_its_defaults(tmp_path: Path) -> None:
    declared = declared_main_widget(notebook_with(tmp_path, {}, declaring(control="dropdown", watch="html")))
    assert (declared.cell_index, declared.control, declared.watch) == (2, "dropdown", "html")
    assert (declared.expect, declared.label, declared.moves) == (None, None, 3)


@pytest.mark.parametrize(
    ("cells", "named"),
    [
        ((), "0 code cells declare"),
        ((declaring(control="slider", watch="output"),) * 2, "2 code cells declare"),
        ((declaring(control="knob", watch="output"),), "main_widget.control: 'knob'"),
        ((declaring(control="slider", watch="plot"),), "main_widget.watch: 'plot'"),
        ((declaring(control="slider", watch="output", expect="("),), "main_widget.expect"),
        ((declaring(control="slider", watch="output", moves=0),), "main_widget.moves"),
        ((declaring(control="slider", watch="output", colour="red"),), "unknown field(s) ['colour']"),
    ],
)
def test_a_bad_declaration_is_named(tmp_path: Path, cells: tuple[dict, ...], named: str) -> None:
    with pytest.raises(DeclarationError) as raised:
        declared_main_widget(notebook_with(tmp_path, *cells))
    assert named in str(raised.value)
    assert "lab.ipynb" in str(raised.value)

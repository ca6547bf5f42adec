"""Which widget of a notebook the browser test turns, read from the notebook itself.

A lab marks the code cell that holds its main widget with cell metadata (see
``tests/e2e/README.md``)::

    "metadata": {"fleetlab": {"main_widget": {"control": "slider", "watch": "output",
                                              "expect": "duplicate rate \\\\d"}}}

``control`` is what the test moves, ``watch`` is the part of the widget that must
change after every move, ``expect`` (optional) a regular expression the watched
text must match after every move, ``label`` (optional) the control's description
when the cell has several of that kind, ``moves`` (optional, default 3) how many
moves to make. Nothing here imports Playwright: the declarations are checked
without a browser too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

METADATA_KEY = "main_widget"
# control -> (CSS selector of the widget, of the element inside it that the test acts on)
CONTROLS = {
    "slider": (".widget-slider", ".noUi-handle"),
    "dropdown": (".widget-dropdown", "select"),
    "button": ("button.widget-button", ":scope"),
}
# watch -> CSS selector of the widget part that must change
WATCHED = {
    "output": ".widget-output",
    "html": ".widget-html",
}
KNOWN_KEYS = {"control", "watch", "expect", "label", "moves"}
DEFAULT_MOVES = 3


class DeclarationError(ValueError):
    """A main-widget declaration is missing or malformed; the message names the notebook and field."""


@dataclass(frozen=True)
class MainWidget:
    """A notebook's main widget as its cell metadata declares it."""

    cell_index: int  # among the notebook's code cells, counted from 0
    control: str
    watch: str
    expect: str | None = None
    label: str | None = None
    moves: int = DEFAULT_MOVES

    @property
    def control_selectors(self) -> tuple[str, str]:
        return CONTROLS[self.control]

    @property
    def watch_selector(self) -> str:
        return WATCHED[self.watch]


def declared_main_widget(path: Path) -> MainWidget:
    """The one main widget ``path`` declares. Raises DeclarationError naming what is wrong."""
    cells = json.loads(path.read_text())["cells"]
    code_cells = [cell for cell in cells if cell["cell_type"] == "code"]
    found = [
        (index, cell["metadata"]["fleetlab"][METADATA_KEY])
        for index, cell in enumerate(code_cells)
        if METADATA_KEY in cell.get("metadata", {}).get("fleetlab", {})
    ]
    if len(found) != 1:
        raise DeclarationError(
            f"{path.name}: {len(found)} code cells declare metadata fleetlab.{METADATA_KEY}; exactly one must "
            f'(e.g. {{"fleetlab": {{"{METADATA_KEY}": {{"control": "slider", "watch": "output"}}}}}}; '
            "see tests/e2e/README.md)"
        )
    index, declared = found[0]
    return _parse(path.name, index, declared)


def _parse(name: str, index: int, declared: object) -> MainWidget:
    where = f"{name}: fleetlab.{METADATA_KEY}"
    if not isinstance(declared, dict):
        raise DeclarationError(f"{where}: must be an object, got {declared!r}")
    unknown = sorted(set(declared) - KNOWN_KEYS)
    if unknown:
        raise DeclarationError(f"{where}: unknown field(s) {unknown}; known: {sorted(KNOWN_KEYS)}")
    control, watch = declared.get("control"), declared.get("watch")
    if control not in CONTROLS:
        raise DeclarationError(f"{where}.control: {control!r} is not one of {sorted(CONTROLS)}")
    if watch not in WATCHED:
        raise DeclarationError(f"{where}.watch: {watch!r} is not one of {sorted(WATCHED)}")
    expect = declared.get("expect")
    if expect is not None:
        try:
            re.compile(expect)
        except (re.error, TypeError) as exc:
            raise DeclarationError(f"{where}.expect: not a regular expression ({exc})") from None
    moves = declared.get("moves", DEFAULT_MOVES)
    if not isinstance(moves, int) or isinstance(moves, bool) or moves < 1:
        raise DeclarationError(f"{where}.moves: must be a whole number >= 1, got {moves!r}")
    label = declared.get("label")
    if label is not None and not isinstance(label, str):
        raise DeclarationError(f"{where}.label: must be text, got {label!r}")
    return MainWidget(cell_index=index, control=control, watch=watch, expect=expect, label=label, moves=moves)

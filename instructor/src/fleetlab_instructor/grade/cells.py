"""A notebook's cell named as the learner sees it: its place among the code cells, and the exercise it is under."""

from __future__ import annotations

import re

from nbformat import NotebookNode

HEADING = re.compile(r"^#+\s+(?P<text>.*)$", re.MULTILINE)
EXERCISE = re.compile(r"^Exercise\s+(?P<name>.+?)\s*$")


def cell_name(nb: NotebookNode, index: int) -> str:
    """``code cell N`` (N counts code cells only, from 1), with ``(exercise X)`` when the last heading above it
    is an exercise's (``## Exercise 01.visibility``)."""
    code_cells = sum(1 for cell in nb.cells[: index + 1] if cell.cell_type == "code")
    exercise = None
    for cell in nb.cells[:index]:
        headings = HEADING.findall(cell.source) if cell.cell_type == "markdown" else []
        if headings:
            found = EXERCISE.match(headings[-1].strip())
            exercise = found["name"] if found else None
    return f"code cell {code_cells}" + (f" (exercise {exercise})" if exercise else "")

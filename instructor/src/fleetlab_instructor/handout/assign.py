"""Write the student notebooks from the instructor notebooks.

Instructor notebooks (``labs/solutions/``) hold solutions between nbgrader's
markers ``### BEGIN SOLUTION`` and ``### END SOLUTION``. The student version
of each (``labs/``) has:

* each solution region replaced by a stub that makes its check say "not yet":
  inside a function (an indented region) ``raise NotImplementedError``, at the
  top level ``name = ...`` for every name the solution defines; in markdown,
  ``YOUR ANSWER HERE``. Lines before the BEGIN marker (the signature) stay;
* outputs, execution counts, timing and saved widget state cleared;
* every cell tagged ``hidden`` removed.
"""

from __future__ import annotations

import ast
import copy
import textwrap
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from fleetlab.core.errors import InvalidInput

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_TAG = "hidden"


def student_version(nb: NotebookNode, *, name: str = "notebook") -> NotebookNode:
    """The student notebook for instructor notebook ``nb`` (``nb`` is left as it was).

    Raises InvalidInput naming ``name`` and the cell for a malformed solution region.
    """
    student = copy.deepcopy(nb)
    student.metadata.pop("widgets", None)
    kept = []
    for number, cell in enumerate(student.cells, start=1):
        if HIDDEN_TAG in cell.metadata.get("tags", []):
            continue
        _to_student(cell, where=f"{name} cell {number}")
        kept.append(cell)
    student.cells = kept
    return student


def strip_solutions(source: str, *, code: bool, where: str = "source") -> str:
    """``source`` with every solution region replaced by its stub.

    Raises InvalidInput (its field is ``where``) for unpaired markers or a stub that cannot be made.
    """
    lines = source.split("\n")
    result: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.strip() == END:
            raise InvalidInput(where, f"{END!r} without a {BEGIN!r} before it", hint="pair the markers")
        if line.strip() != BEGIN:
            result.append(line)
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if lines[i].strip() == END), None)
        if end is None:
            raise InvalidInput(where, f"{BEGIN!r} without a matching {END!r}", hint="close the region")
        indent = line[: len(line) - len(line.lstrip())]
        result += _stub(indent, lines[index + 1 : end], code=code, where=where)
        index = end + 1
    return "\n".join(result)


def render(nb: NotebookNode) -> str:
    """The exact text ``assign`` writes for ``nb``."""
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def plan(solutions: Path, students: Path) -> dict[Path, str]:
    """Each student notebook's path and the text it should have."""
    if not solutions.is_dir():
        raise InvalidInput("--solutions", f"{str(solutions)!r} is not a folder", hint="run from the repository root")
    return {
        students / source.name: render(student_version(nbformat.read(source, as_version=4), name=str(source)))
        for source in sorted(solutions.glob("*.ipynb"))
    }


def assign(solutions: Path, students: Path) -> list[Path]:
    """Write every student notebook; returns the paths written."""
    written = []
    for path, text in plan(solutions, students).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def stale(solutions: Path, students: Path) -> list[Path]:
    """Student notebooks that are missing or differ from what ``assign`` would write."""
    return [
        path
        for path, text in plan(solutions, students).items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]


def _to_student(cell: NotebookNode, *, where: str) -> None:
    cell.metadata.pop("execution", None)
    if cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None
    if cell.cell_type in ("code", "markdown"):
        cell.source = strip_solutions(cell.source, code=cell.cell_type == "code", where=where)


def _stub(indent: str, region: list[str], *, code: bool, where: str) -> list[str]:
    if not code:
        return [f"{indent}YOUR ANSWER HERE"]
    if indent:
        return [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError"]
    names = _defined_names("\n".join(region))
    if not names:
        raise InvalidInput(
            where,
            "a top-level solution region defines no name, so its stub could not name the answer",
            hint="assign the answer (answer = ...) inside the region, or put the markers inside a function",
        )
    return [f"{name} = ...  # YOUR CODE HERE" for name in names]


def _defined_names(code: str) -> list[str]:
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            targets = [node.name]
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            targets = []
        names += [name for name in targets if name not in names]
    return names

import shutil

import nbformat
import pytest
from fleetlab_instructor.handout.assign import assign, render, stale, strip_solutions, student_version
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from fleetlab.core.errors import InvalidInput

from .conftest import FIXTURES


def test_a_region_inside_a_function_keeps_the_signature_and_raises_not_implemented():
    source = (
        "def visibility_timeout(p95_seconds):\n"
        '    """Docstring stays."""\n'
        "    ### BEGIN SOLUTION\n"
        "    return 2 * p95_seconds\n"
        "    ### END SOLUTION\n"
        "\n"
        "print('after')"
    )
    assert strip_solutions(source, code=True) == (
        "def visibility_timeout(p95_seconds):\n"
        '    """Docstring stays."""\n'
        "    # YOUR CODE HERE\n"
        "    raise NotImplementedError\n"
        "\n"
        "print('after')"
    )


def test_a_top_level_region_becomes_an_ellipsis_for_each_name_it_defines():
    source = (
        "### BEGIN SOLUTION\nplanes = {'event bus': 'control'}\ntimeout: int = 60\n"
        "def helper():\n    pass\n### END SOLUTION"
    )
    assert strip_solutions(source, code=True) == (
        "planes = ...  # YOUR CODE HERE\ntimeout = ...  # YOUR CODE HERE\nhelper = ...  # YOUR CODE HERE"
    )


def test_a_markdown_region_asks_for_an_answer():
    assert strip_solutions("Q?\n### BEGIN SOLUTION\nThree.\n### END SOLUTION", code=False) == "Q?\nYOUR ANSWER HERE"


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("### BEGIN SOLUTION\nx = 1", "without a matching"),
        ("x = 1\n### END SOLUTION", "without a '### BEGIN SOLUTION' before it"),
        ("### BEGIN SOLUTION\nprint(1)\n### END SOLUTION", "defines no name"),
    ],
)
def test_malformed_regions_are_refused_naming_the_cell(source, problem):
    nb = new_notebook(cells=[new_markdown_cell("intro"), new_code_cell(source)])
    with pytest.raises(InvalidInput) as raised:
        student_version(nb, name="labs/solutions/01.ipynb")
    assert raised.value.field == "labs/solutions/01.ipynb cell 2"
    assert problem in raised.value.problem


def instructor_notebook():
    solved = new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", execution_count=3)
    solved.outputs = [new_output("stream", name="stdout", text="1\n")]
    solved.metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
    note = new_markdown_cell("facilitator only")
    note.metadata["tags"] = ["hidden"]
    nb = new_notebook(cells=[new_markdown_cell("# Lab"), solved, note])
    nb.metadata["widgets"] = {"state": {}}
    return nb


def test_the_student_version_drops_outputs_counts_timing_widgets_and_hidden_cells():
    original = instructor_notebook()
    before = render(original)
    student = student_version(original)
    assert render(original) == before  # the instructor notebook is left as it was
    assert [cell.cell_type for cell in student.cells] == ["markdown", "code"]
    code = student.cells[1]
    assert (code.outputs, code.execution_count, "execution" in code.metadata) == ([], None, False)
    assert "widgets" not in student.metadata
    assert "return 1" not in code.source


def test_assign_writes_and_check_finds_missing_and_edited_notebooks(tmp_path):
    solutions, students = tmp_path / "solutions", tmp_path / "labs"
    solutions.mkdir()
    nbformat.write(instructor_notebook(), solutions / "01_lab.ipynb")
    assert stale(solutions, students) == [students / "01_lab.ipynb"]
    assert assign(solutions, students) == [students / "01_lab.ipynb"]
    assert stale(solutions, students) == []
    (students / "01_lab.ipynb").write_text((students / "01_lab.ipynb").read_text().replace("YOUR CODE", "MY CODE"))
    assert stale(solutions, students) == [students / "01_lab.ipynb"]


def test_the_committed_fixture_student_notebook_is_up_to_date(tmp_path):
    assert stale(FIXTURES / "lab" / "solutions", FIXTURES / "lab") == []
    shutil.copytree(FIXTURES / "lab", tmp_path / "lab")
    assign(tmp_path / "lab" / "solutions", tmp_path / "lab")
    assert (tmp_path / "lab" / "99_fixture.ipynb").read_text() == (FIXTURES / "lab" / "99_fixture.ipynb").read_text()

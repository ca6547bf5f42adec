"""The lab notebooks' exercises stand on their own: each runs after the set-up cell alone.

A learner who restarts the kernel, runs the set-up cell and jumps to an exercise must not
meet a NameError from a demo cell they skipped.
"""

from pathlib import Path

import nbformat
import pytest
from fleetlab_tools.warm_kernels import kernel_name
from nbclient import NotebookClient

SOLUTIONS = Path(__file__).parents[2] / "labs" / "solutions"


def exercises_only(path: Path) -> nbformat.NotebookNode:
    """The notebook's set-up cell, its exercise cells (those that call check) and its last cell."""
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    setup = next(cell for cell in code if "fleetlab.start(" in cell.source)
    exercises = [cell for cell in code if 'check("' in cell.source]
    nb.cells = [setup, *exercises, code[-1]]
    return nb


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*.ipynb")), ids=lambda path: path.stem)
def test_each_exercise_runs_after_the_set_up_cell_alone(path, tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETLAB_EXPECT_CHECKS", "pass")
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))
    nb = exercises_only(path)
    assert len(nb.cells) >= 3
    client = NotebookClient(nb, timeout=120, kernel_name=kernel_name(), resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [output for cell in nb.cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.output_type == "error"]


FACILITATOR = SOLUTIONS.parents[1] / "docs" / "facilitator"


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*.ipynb")), ids=lambda path: path.stem)
def test_the_facilitator_note_states_each_checks_points_and_cases(path):
    from fleetlab_instructor.checks import side_of

    from fleetlab.course.grading import registry

    note = " ".join((FACILITATOR / f"{path.stem}.md").read_text(encoding="utf-8").split())
    for check in registry.checks_of(path.stem[:2]):
        split = f"{len(check.public)} public, {check.hidden_cases} hidden"
        assert f"**What {check.id} checks** ({registry.format_points(check.points)} point" in note, check.id
        assert split in note, f"{check.id}: the note must say {split!r}"
        for wrong in side_of(check.id).wrong_answers:
            assert wrong.public or "Hidden only" in note, f"{check.id}: say which mistakes only hidden cases catch"


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*.ipynb")), ids=lambda path: path.stem)
def test_the_facilitator_note_says_what_the_room_report_shows_in_the_catalogues_words(path):
    import re

    from fleetlab_instructor.checks import side_of

    from fleetlab.course.grading import registry

    note = (FACILITATOR / f"{path.stem}.md").read_text(encoding="utf-8")
    head, _, said = note.partition("**In the room report**")
    assert said, f"{path.stem}: the note needs an 'In the room report' paragraph"
    checks = registry.checks_of(path.stem[:2])
    names = {wrong.name for check in checks for wrong in side_of(check.id).wrong_answers}
    shared = [label for check in checks for label in side_of(check.id).shared_mistakes.values()]
    quoted = set(re.findall(r'"([^"]+)"', said))
    unknown = {q for q in quoted - names if not any(label.startswith(q) for label in shared)}
    assert quoted and not unknown, f"not the name of a catalogue entry or a shared mistake: {sorted(unknown)}"
    unnamed = [check.id for check in checks if len(checks) > 1 and f"`{check.id}`" not in said]
    assert not unnamed, f"{path.stem}: say what the room report shows for {unnamed}"


@pytest.mark.parametrize("path", sorted(SOLUTIONS.glob("*.ipynb")), ids=lambda path: path.stem)
def test_each_check_names_the_answer_its_notebook_hands_to_check(path):
    # The grader finds each answer by this name, check() call or not.
    import re

    from fleetlab.course.grading import registry

    nb = nbformat.read(path, as_version=4)
    called = dict(re.findall(r'check\(\s*"(\d\d\.[a-z0-9_]+)"\s*,\s*([A-Za-z_]\w*)\s*\)',
                             "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")))
    named = {check.id: check.answer_name for check in registry.checks_of(path.stem[:2])}
    assert called == named

"""``fleetlab release``: the learner's course, written apart, holding nothing of the instructor's side.

The release is written once for the module. What a learner must not get is looked for in every file
of it: solution text, each hidden case (its repr, and every text of it specific enough to come only
from where it was written: ``secrets_of``, shared with the wheel's test), each reference answer and
catalogue entry, and the instructor's folders. The release's two distributions are built into wheels
and installed, alone, in a fresh venv (``test_packaging``'s way: no fleetlab but theirs is importable
there) that runs the demo. A solution notebook is graded once with the kernel importing the release's
library and once the course's, and earns the same full points. ``make test-release`` runs the release's
own ``make test`` on a fresh clone of it (it installs from the package registry, so it is not here).
"""

from __future__ import annotations

import functools
import glob
import inspect
import os
import shutil
import subprocess
import tomllib
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fleetlab_instructor.checks import side_of
from fleetlab_instructor.handout.assign import BEGIN, END, strip_solutions
from fleetlab_instructor.grade.environment import kernel_env
from fleetlab_instructor.grade.grade import Job, Limits, grade_job
from fleetlab_instructor.grade.judging import JudgeServer, judge_answers
from fleetlab_instructor.handout.release import TEMPLATE, learner_test_pins, template_files, write_release
from fleetlab_tools.kernel import NotebookKernel
from test_packaging import (RUN_TIMEOUT, build_hook, definition_line, fresh_venv, pip_into, secrets_of,
                            share_dependencies, without_pythonpath)

from fleetlab.cli import main
from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.registry import checks_of, shipped_labs

REPO = Path(__file__).resolve().parents[1]
INSTRUCTOR_ONLY = ("labs/solutions", "instructor", "docs/facilitator", "tests", "docs/writing-checks.md")
"""What of the course a release must not hold (each a path from the root)."""


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "learner"
    write_release(REPO, out)
    return out


@pytest.fixture(scope="module")
def release_texts(release: Path) -> dict[str, str]:
    """Every file of the release as text, by its path in the release."""
    return {path.relative_to(release).as_posix(): path.read_bytes().decode("utf-8", errors="replace")
            for path in release.rglob("*") if path.is_file()}


def leaks(secrets: dict[str, str], files: dict[str, str]) -> list[str]:
    """Each secret text found in a file: ``what is in path``."""
    return [f"{what} is in {name}" for text, what in secrets.items() for name, content in files.items()
            if text in content]


@functools.cache
def given_signatures() -> set[str]:
    """The ``def`` lines the instructor notebooks write outside their solution regions: the exercises' signatures,
    which the learner is given (lab 04's reference ``choose_timeouts(steps)`` is named as the exercise asks)."""
    given = set()
    for notebook in (REPO / "labs" / "solutions").glob("*.ipynb"):
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type == "code":
                outside = strip_solutions(cell.source, code=True, where=notebook.name)
                given |= {line.strip() for line in outside.splitlines() if line.lstrip().startswith("def ")}
    return given


def body(answer: Any) -> str | None:
    """A named answer's source after its definition line, for one whose definition line is a secret."""
    if definition_line(answer) is None:
        return None
    lines, _ = inspect.getsourcelines(answer)
    definitions = ("def ", "async def ", "class ")
    start = next(index for index, line in enumerate(lines) if line.lstrip().startswith(definitions))
    return "".join(lines[start + 1:])


def hidden_case_secrets(check_id: str) -> dict[str, str]:
    """``secrets_of`` the check but the signatures a learner is given; the repr of each hidden case (all its inputs
    at once); the whole body of the reference and of each named catalogue entry."""
    given = given_signatures()
    found = {text: what for text, what in secrets_of(check_id).items() if text not in given}
    side = side_of(check_id)
    for case in side.hidden:
        found[repr(case)] = f"hidden case {case.name!r} (its repr)"
    for what, answer in (("the reference answer", side.reference),
                         *((f"the answer {entry.name!r}", entry.answer)
                           for entry in (*side.right_answers, *side.wrong_answers))):
        if text := body(answer):
            found[text] = f"{what} (its body)"
    return found


# --- what the release holds --------------------------------------------------------


def test_the_release_holds_the_labs_the_library_the_tooling_and_its_own_readme_and_makefile(release: Path) -> None:
    own = {relative.parts[0] for relative in template_files()}  # the release's README, Makefile, .gitignore, ...
    assert {".gitignore", "Makefile", "README.md"} <= own
    assert {path.name for path in release.iterdir()} == {"LICENSE", "docs", "labs", "pyproject.toml", "src", "tools",
                                                          *own}
    for relative, text in template_files().items():
        pins = " ".join(learner_test_pins(REPO / "pyproject.toml"))
        assert (release / relative).read_text() == text.replace("@" + "TEST_TOOLS@", pins)
    notebooks = sorted(path.name for path in (release / "labs").iterdir())
    assert notebooks == sorted(path.name for path in (REPO / "labs" / "solutions").glob("*.ipynb"))
    assert len(notebooks) == 8
    for name in notebooks:  # the student notebooks as the course commits them (fleetlab assign --check holds those)
        assert (release / "labs" / name).read_text() == (REPO / "labs" / name).read_text(), name
    assert sorted(path.name for path in (release / "src").iterdir()) == ["fleetlab"]
    assert sorted(path.name for path in (release / "tools" / "src").iterdir()) == ["fleetlab_tools"]
    assert (release / "pyproject.toml").read_text() == (REPO / "pyproject.toml").read_text()
    makefile = (release / "Makefile").read_text()
    assert "\nlab: venv\n" in makefile and "\ntest: venv\n" in makefile and "@" + "TEST_TOOLS@" not in makefile
    assert "pytest==" in makefile and "nbval==" in makefile and "FLEETLAB_EXPECT_CHECKS=not-yet" in makefile
    assert "make lab" in (release / "README.md").read_text()


def test_the_release_holds_no_pycache_or_build_leftovers(release: Path) -> None:
    junk = [path for path in release.rglob("*") if path.name == "__pycache__" or path.suffix in (".pyc", ".egg-info")]
    assert junk == []


def test_the_release_holds_nothing_of_the_instructors_side(release: Path) -> None:
    assert [part for part in INSTRUCTOR_ONLY if (release / part).exists()] == []
    named = [path for path in release.rglob("*") if "fleetlab_instructor" in path.name or "facilitator" in path.name]
    assert named == []
    assert (REPO / "docs" / "facilitator").is_dir() and (REPO / "labs" / "solutions").is_dir()  # not a vacuous pass


def test_no_file_of_the_release_holds_solution_text(release_texts: dict[str, str]) -> None:
    marked = [name for name, text in release_texts.items() if BEGIN in text or END in text or "BEGIN SOLUTION" in text]
    assert marked == []


@pytest.mark.parametrize("lab", shipped_labs())
def test_no_file_of_the_release_holds_a_hidden_case_reference_or_catalogue(release_texts: dict[str, str],
                                                                          lab: str) -> None:
    checks = checks_of(lab)
    for check in checks:  # each hidden case is looked for by its repr and by one text at least
        for case in side_of(check.id).hidden:
            assert [what for what in secrets_of(check.id).values() if f"hidden case {case.name!r}" in what], case
    secrets = {text: f"{check.id}: {what}" for check in checks for text, what in hidden_case_secrets(check.id).items()}
    assert not leaks(secrets, release_texts), "\n".join(leaks(secrets, release_texts))


def test_the_search_finds_a_hidden_case_or_a_reference_planted_in_a_file() -> None:
    """The search reads what it is given: a hidden case's repr (with its name) and the reference's body, planted in
    a notebook, are each reported; the exercise's own signature, which the learner is given, is not a secret."""
    (case, *_) = side_of("01.visibility").hidden
    secrets = hidden_case_secrets("01.visibility")
    reference = side_of("01.visibility").reference
    where = "labs/01_at_least_once.ipynb"
    planted = {where: f"workload = {case!r}\n\ndef visibility(times):\n{body(reference)}"}
    assert sorted(leaks(secrets, planted)) == [f"hidden case {case.name!r} (its repr) is in {where}",
                                               f"hidden case {case.name!r} (name) is in {where}",
                                               f"the reference answer (its body) is in {where}"]
    assert "def choose_timeouts(steps):" in given_signatures()


# --- writing it ----------------------------------------------------------------------


@pytest.fixture
def fleetlab_with_declared_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fleetlab`` with the subcommands tools/ and instructor/ declare, as an install of this tree registers them."""
    declared = [EntryPoint(name, value, "fleetlab.commands")
                for folder in ("tools", "instructor")
                for name, value in tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"][
                    "entry-points"]["fleetlab.commands"].items()]
    monkeypatch.setattr("fleetlab.cli.entry_points", lambda group: declared)


def test_fleetlab_release_prints_its_count_and_size_and_refuses_a_folder_that_is_not_empty(
    fleetlab_with_declared_plugins: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    out = tmp_path / "learner"
    assert main(["release", str(out)]) == 0
    count = sum(1 for path in out.rglob("*") if path.is_file())
    assert f"wrote the learner's release to {out}: {count} files, " in capsys.readouterr().out
    assert main(["release", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"OUT: '{out}' is not empty" in err and "--force" in err


def test_force_replaces_what_out_holds_but_keeps_its_git(tmp_path: Path) -> None:
    out = tmp_path / "learner"
    (out / ".git").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "labs" / "solutions").mkdir(parents=True)
    (out / "labs" / "solutions" / "00_orientation.ipynb").write_text("{}")
    with pytest.raises(InvalidInput) as refused:
        write_release(REPO, out)
    assert refused.value.field == "OUT" and (out / "labs" / "solutions").is_dir()
    written = write_release(REPO, out, force=True)
    assert not (out / "labs" / "solutions").exists() and (out / ".git" / "HEAD").is_file()
    assert written.files == sum(1 for path in out.rglob("*") if path.is_file() and ".git" not in path.parts)
    assert written.size == sum(path.stat().st_size for path in out.rglob("*")
                               if path.is_file() and ".git" not in path.parts)


@pytest.mark.parametrize("inside", [".", "src/learner", "labs/learner"])
def test_out_that_holds_the_course_or_lies_inside_what_it_copies_is_refused_before_anything_is_written(
    inside: str,
) -> None:
    out = REPO / inside
    existed = out.exists()
    with pytest.raises(InvalidInput, match="holds the course or lies inside") as refused:
        write_release(REPO, out, force=True)
    assert refused.value.field == "OUT" and out.exists() == existed


def test_a_release_that_would_ship_solution_text_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """assign.py names the solution markers: shipped as if it were a document, the release is refused."""
    shipped = "instructor/src/fleetlab_instructor/handout/assign.py"
    assert BEGIN in (REPO / shipped).read_text()
    monkeypatch.setattr("fleetlab_instructor.handout.release.DOCS", (shipped,))
    with pytest.raises(InvalidInput, match="holds solution text") as refused:
        write_release(REPO, tmp_path / "learner")
    assert refused.value.field == "OUT"


def test_a_folder_that_is_not_the_course_is_refused_naming_course(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="is not the course's root") as refused:
        write_release(tmp_path, tmp_path / "out")
    assert refused.value.field == "--course" and not (tmp_path / "out").exists()


def test_the_makefiles_test_tools_come_pinned_from_the_courses_test_extra(tmp_path: Path) -> None:
    assert learner_test_pins(REPO / "pyproject.toml") == [
        requirement for requirement in tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
            "optional-dependencies"]["test"] if requirement.split("==")[0] in ("pytest", "nbval")]
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project.optional-dependencies]\ntest = ["pytest==9.2.0", "nbvalx==1"]\n')
    with pytest.raises(InvalidInput, match="pins no nbval") as refused:
        learner_test_pins(pyproject)
    assert refused.value.field == f"{pyproject}: optional-dependencies.test"


def test_every_template_file_is_package_data_of_the_instructors_package() -> None:
    """setuptools globs as glob.glob does, where ``*`` skips a name starting with a dot: each such file is named."""
    package = REPO / "instructor" / "src" / "fleetlab_instructor"
    patterns = tomllib.loads((REPO / "instructor" / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["fleetlab_instructor"]
    shipped = {Path(found).relative_to(package / TEMPLATE) for pattern in patterns
               for found in glob.glob(str(package / pattern)) if Path(found).is_file()}
    assert shipped == set(template_files()) and len(shipped) >= 3


# --- the release installed on its own -------------------------------------------------


@pytest.fixture(scope="module")
def release_venv(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the release's two wheels and no other fleetlab; the dependencies linked in."""
    work = tmp_path_factory.mktemp("release-venv")
    project = work / "project"
    shutil.copytree(release, project)  # the build writes into its source: never into the release under test
    builder = fresh_venv(work / "build-env")
    pip_into(builder, *tomllib.loads((release / "pyproject.toml").read_text())["build-system"]["requires"])
    (work / "dist").mkdir()
    wheels = [build_hook(builder, "build_wheel", source, work / "dist")[0] for source in (project, project / "tools")]
    python = fresh_venv(work / "venv")
    pip_into(python, "--no-deps", "--no-index", *wheels)
    share_dependencies(python, work / "dependencies")
    return work / "venv"


def in_release_venv(venv: Path, home: Path, *command: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in without_pythonpath().items() if not key.startswith("FLEETLAB_")}
    environment |= {"FLEETLAB_HOME": str(home), "FLEETLAB_BACKEND": "moto"}
    program, *args = command
    return subprocess.run([str(venv / "bin" / program), *args], cwd=home, env=environment, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)


@pytest.mark.packaging
def test_the_release_installed_alone_runs_the_demo(release_venv: Path, tmp_path: Path) -> None:
    done = in_release_venv(release_venv, tmp_path, "fleetlab", "demo", "--events", "2", "--orchestrated", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 steps: 3 effects, 0 duplicated, 0 lost, 0 unsettled" in done.stdout


@pytest.mark.packaging
def test_the_release_venv_has_the_library_and_the_tooling_and_not_the_instructors_side(release_venv: Path,
                                                                                       tmp_path: Path) -> None:
    code = "import fleetlab, fleetlab_tools; print(fleetlab.__file__); print(fleetlab_tools.__file__)"
    done = in_release_venv(release_venv, tmp_path, "python", "-I", "-c", code)
    assert done.returncode == 0, done.stderr
    assert all(Path(line).is_relative_to(release_venv) for line in done.stdout.split()), done.stdout
    done = in_release_venv(release_venv, tmp_path, "python", "-I", "-c", "import fleetlab_instructor")
    assert done.returncode != 0 and "No module named 'fleetlab_instructor'" in done.stderr
    done = in_release_venv(release_venv, tmp_path, "fleetlab", "grade", "nb.ipynb")
    assert done.returncode == 2 and "comes with the instructor's package, which is not installed" in done.stderr
    done = in_release_venv(release_venv, tmp_path, "fleetlab", "localstack", "--help")
    assert done.returncode == 0 and "not installed" not in done.stdout, done.stdout + done.stderr


# --- grading a notebook completed in the release ------------------------------------------

PROBE = "import fleetlab as _probe\nprint('fleetlab imported from', _probe.__file__)"


def grade_with_library(notebook: Path, library: Path, cwd: Path, work: Path) -> tuple[Job, str]:
    """Grade ``notebook`` (a probe cell appended) in a kernel, and a judge, whose fleetlab is ``library``'s; the
    job and what the probe printed."""
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    home, shared, judging = work / "home", work / "shared", work / "judge"
    home.mkdir(parents=True)
    judging.mkdir()
    grader_env = {**os.environ, "PYTHONPATH": str(library)}
    env = kernel_env(grader_env, home, shared)
    with JudgeServer(kernel_env(grader_env, judging, shared), judging) as server:
        job = Job(notebook.name, nbformat.writes(nb), Limits(cell=120, notebook=300, grading=120),
                  lambda parsed: NotebookKernel(parsed, env=env, cwd=cwd, startup_timeout=60).start(),
                  lambda checks, answers, seconds: judge_answers(server, work / "verdicts", checks, answers, seconds),
                  cwd)
        grade_job(job)
    return job, str(job.nb.cells[len(nb.cells) - 1].outputs)


def test_a_solution_completed_in_the_release_grades_as_in_the_full_course(tmp_path: Path) -> None:
    """labs/solutions/00 copied into the release's labs/ as a learner's work, its kernel in that folder on the
    release's library, earns what it earns in the course, on the course's library: every point of lab 00."""
    release = tmp_path / "learner"
    write_release(REPO, release)
    submitted = release / "labs" / "00_orientation.ipynb"
    shutil.copy(REPO / "labs" / "solutions" / "00_orientation.ipynb", submitted)
    with ThreadPoolExecutor(max_workers=2) as pool:  # side by side, as the grader runs notebooks
        graded_in_release = pool.submit(grade_with_library, submitted, release / "src", release / "labs",
                                        tmp_path / "r")
        graded_in_course = pool.submit(grade_with_library, REPO / "labs" / "solutions" / "00_orientation.ipynb",
                                       REPO / "src", tmp_path / "c", tmp_path / "c")
        (in_release, release_probe), (in_course, course_probe) = graded_in_release.result(), graded_in_course.result()
    assert str(release / "src" / "fleetlab" / "__init__.py") in release_probe
    assert str(REPO / "src" / "fleetlab" / "__init__.py") in course_probe
    assert in_release.row.error == in_course.row.error == ""
    assert in_release.row.scores == in_course.row.scores
    assert in_release.row.max_points == in_course.row.max_points == {check.id: check.points
                                                                     for check in checks_of("00")}
    assert in_release.row.scores == in_release.row.max_points

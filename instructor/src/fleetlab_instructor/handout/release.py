"""Write the learner's release of the course: what a learner clones, and nothing of the instructor's side.

A release holds the student notebooks (``labs/*.ipynb``, written from the
instructor notebooks exactly as ``fleetlab assign`` writes them), the
``fleetlab`` distribution (``pyproject.toml``, ``LICENSE``, ``src/fleetlab``),
the course's tooling (``tools/``: LocalStack without Docker; it holds no
answer), the learner's documents, and every file of the instructor
package's ``release_template/`` folder at the same path: a README, a Makefile
(``make lab``, ``make test``) and a ``.gitignore`` of the release's own.

It never holds ``labs/solutions``, the instructor's package (hidden cases,
reference answers, catalogues, the grader), the facilitator notes
(``docs/facilitator``) or the course's tests.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from fleetlab.core.errors import InvalidInput
from fleetlab_instructor.handout.assign import BEGIN, END, plan

SHIPPED = ("pyproject.toml", "LICENSE", "src/fleetlab", "tools/pyproject.toml", "tools/src/fleetlab_tools")
"""The distributions a learner installs: the library and the tooling, as they are in the course."""
DOCS = ("docs/troubleshooting.md", "docs/settings.md", "docs/backends.md", "docs/fidelity.md")
"""The documents the library's messages point a learner to."""
TEMPLATE = "release_template"
"""The instructor package's folder of files written into the release at the same path (package data)."""
LEARNER_TEST_TOOLS = ("pytest", "nbval")
"""What the release's ``make test`` needs beyond the library and JupyterLab, pinned as the course pins them."""
TEST_TOOLS_PLACEHOLDER = "@TEST_TOOLS@"
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints")
KEPT = frozenset({".git"})
"""What ``force`` keeps in OUT: a clone of the learner's repository stays one."""
_NAME = re.compile(r"^[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Release:
    """A written release: where it is, how many files it holds and their size in bytes (``.git`` not counted)."""

    out: Path
    files: int
    size: int


def write_release(course: Path, out: Path, *, force: bool = False) -> Release:
    """Write the learner's release of ``course`` (the repository's root) into ``out``.

    ``out`` must be empty or missing; with ``force`` its contents are replaced
    (a ``.git`` in it is kept). Raises InvalidInput naming ``--course`` for a
    folder that is not the course, ``OUT`` for a non-empty folder, a file, or
    one that holds or lies inside what the release copies, and ``OUT`` again
    if solution text reached the release (its files are left for a look).
    """
    _require_course(course)
    _prepare_out(course, out, force=force)
    for relative in (*SHIPPED, *DOCS):
        _copy(course / relative, out / relative)
    for path, text in plan(course / "labs" / "solutions", out / "labs").items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    test_tools = " ".join(learner_test_pins(course / "pyproject.toml"))
    for relative, text in template_files().items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / relative).write_text(text.replace(TEST_TOOLS_PLACEHOLDER, test_tools), encoding="utf-8")
    _refuse_solution_text(out)
    return measure(out)


def template_files() -> dict[Path, str]:
    """Each file of ``release_template/`` (package data of the instructor's package): its path there, its text."""
    with resources.as_file(resources.files("fleetlab_instructor") / TEMPLATE) as folder:
        return {path.relative_to(folder): path.read_text(encoding="utf-8")
                for path in sorted(folder.rglob("*"))
                if path.is_file() and "__pycache__" not in path.relative_to(folder).parts}  # bytecode is no template


def learner_test_pins(pyproject: Path) -> list[str]:
    """The ``test`` extra's pinned requirement for each of ``LEARNER_TEST_TOOLS``; InvalidInput naming a missing one."""
    extra = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["test"]
    by_name = {match.group(0).lower(): requirement for requirement in extra if (match := _NAME.match(requirement))}
    missing = [name for name in LEARNER_TEST_TOOLS if name not in by_name]
    if missing:
        raise InvalidInput(f"{pyproject}: optional-dependencies.test", f"pins no {', '.join(missing)}",
                           hint="the release's make test installs them from there")
    return [by_name[name] for name in LEARNER_TEST_TOOLS]


def measure(out: Path) -> Release:
    """How many files ``out`` holds and their total size, ``.git`` left out."""
    files = [path for path in out.rglob("*") if path.is_file() and ".git" not in path.relative_to(out).parts]
    return Release(out, len(files), sum(path.stat().st_size for path in files))


def _require_course(course: Path) -> None:
    if not (course / "labs" / "solutions").is_dir() or not (course / "src" / "fleetlab").is_dir():
        raise InvalidInput("--course", f"{str(course)!r} is not the course's root (no labs/solutions and src/fleetlab)",
                           hint="run from the repository's root, or name it with --course")


def _prepare_out(course: Path, out: Path, *, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InvalidInput("OUT", f"{str(out)!r} is a file", hint="name a folder for the release")
    where, root = out.resolve(), course.resolve()
    copied = ("src", "tools", "labs", "docs")
    if root.is_relative_to(where) or any(where.is_relative_to(root / part) for part in copied):
        raise InvalidInput("OUT", f"{str(out)!r} holds the course or lies inside what the release copies",
                           hint="write the release outside src/, tools/, labs/ and docs/, e.g. ../learner-release")
    present = [child for child in out.iterdir() if child.name not in KEPT] if out.is_dir() else []
    if present and not force:
        raise InvalidInput("OUT", f"{str(out)!r} is not empty ({len(present)} entries)",
                           hint="name a new folder, or pass --force to replace what it holds (a .git is kept)")
    for child in present:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, ignore=SKIPPED)
    else:
        shutil.copy2(source, target)


def _refuse_solution_text(out: Path) -> None:
    for path in sorted(out.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(out).parts:
            text = path.read_bytes().decode("utf-8", errors="replace")
            if BEGIN in text or END in text:
                raise InvalidInput("OUT", f"{path} holds solution text ({BEGIN!r})",
                                   hint="keep solutions in labs/solutions only; the release is left for a look")

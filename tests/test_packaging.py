"""The fleetlab distribution as a learner gets it: built, installed on its own, run, and holding no answer.

The sdist and the wheel are built as pip builds them: in a fresh environment that holds only what
pyproject.toml's ``build-system.requires`` pins, through the backend's PEP 517 hooks, the wheel from
the unpacked sdist (so the sdist is complete). The wheel is installed with ``--no-deps`` into a
fresh venv that sees this interpreter's installed dependencies through a ``.pth`` file naming a
folder of links to its site-packages, leaving out every fleetlab distribution and editable
install: installing the dependencies from the registry would take minutes, and this way no
fleetlab but the wheel's is importable there. Building needs the build backend from the package
registry (or pip's cache).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fleetlab_instructor import checks as instructor_checks
from fleetlab_instructor.checks import side_of

from fleetlab.course.grading.registry import checks_of, shipped_labs

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE", "src")
"""What the build reads from the repository: the metadata, the readme and the licence it names, the package."""
LEFT_OUT = re.compile(r"^(fleetlab|__editable__)", re.IGNORECASE)
"""Site-packages entries the wheel's venv must not see: every fleetlab distribution, every editable install."""
A_WARNING = re.compile(r"\b\w+Warning\b")
RUN_TIMEOUT = 120


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path
    build_log: str


@dataclass(frozen=True)
class WheelEnv:
    """A venv holding the wheel and no other fleetlab; its programs run with ``home`` as FLEETLAB_HOME and cwd."""

    root: Path
    home: Path

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        environment = {key: value for key, value in without_pythonpath().items() if not key.startswith("FLEETLAB_")}
        environment |= {"FLEETLAB_HOME": str(self.home), "FLEETLAB_BACKEND": "moto"}
        return subprocess.run([str(self.root / "bin" / program), *args], cwd=self.home, env=environment,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)

    def python_code(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``code`` run isolated (-I: no PYTHONPATH, no user site, no current folder) by the venv's python."""
        return self.run("python", "-I", "-c", code, *args)


# --- building and installing -------------------------------------------------------


def without_pythonpath() -> dict[str, str]:
    """This process's environment without PYTHONPATH, which points at the working tree's fleetlab."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its successful end (a failure shows its output)."""
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=without_pythonpath(), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


def fresh_venv(root: Path) -> Path:
    """A venv without pip at ``root`` (pip is driven from outside with --python); its python."""
    run(sys.executable, "-m", "venv", "--without-pip", root)
    return root / "bin" / "python"


def pip_into(python: Path, *args: str | Path) -> None:
    run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--disable-pip-version-check", *args)


def build_hook(python: Path, hook: str, source: Path, out: Path) -> tuple[Path, str]:
    """Call the build backend's PEP 517 ``hook`` on ``source`` (cwd), writing into ``out``: the file and the log."""
    backend = PYPROJECT["build-system"]["build-backend"]
    code = f"import sys, {backend} as backend; print(backend.{hook}(sys.argv[1]))"
    done = run(python, "-c", code, out, cwd=source)
    return out / done.stdout.strip().splitlines()[-1], done.stdout + done.stderr


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist, built from a copy of the project, and the wheel, built from the unpacked sdist."""
    work = tmp_path_factory.mktemp("build")
    builder = fresh_venv(work / "build-env")
    pip_into(builder, *PYPROJECT["build-system"]["requires"])
    project = work / "project"
    for name in PROJECT_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            project.mkdir(exist_ok=True)
            shutil.copy(source, project / name)
    out = work / "dist"
    out.mkdir()
    sdist, sdist_log = build_hook(builder, "build_sdist", project, out)
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
    wheel, wheel_log = build_hook(builder, "build_wheel", work / "unpacked" / sdist.name.removesuffix(".tar.gz"), out)
    return Dists(sdist, wheel, sdist_log + wheel_log)


def share_dependencies(python: Path, links: Path) -> None:
    """Let the venv of ``python`` import this interpreter's dependencies (links in ``links``), fleetlab's left out."""
    links.mkdir()
    for entry in site_packages().iterdir():
        if not LEFT_OUT.match(entry.name):
            (links / entry.name).symlink_to(entry)
    venv_site = Path(run(python, "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    (venv_site / "fleetlab-test-dependencies.pth").write_text(f"{links}\n")


@pytest.fixture(scope="module")
def wheel_env(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> WheelEnv:
    """A fresh venv holding the wheel (no dependencies installed) that sees this interpreter's dependencies."""
    work = tmp_path_factory.mktemp("wheel-env")
    python = fresh_venv(work / "venv")
    pip_into(python, "--no-deps", "--no-index", dists.wheel)
    share_dependencies(python, work / "dependencies")
    home = work / "home"
    home.mkdir()
    return WheelEnv(work / "venv", home)


def site_packages() -> Path:
    """This interpreter's site-packages, where its dependencies are installed."""
    return Path(sysconfig.get_path("purelib", vars={"base": sys.prefix, "platbase": sys.prefix}))


def wheel_files(wheel: Path) -> dict[str, str]:
    """Every file of the wheel, as text."""
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name).decode("utf-8", errors="replace") for name in archive.namelist()}


# --- the build ---------------------------------------------------------------------


def test_the_build_backend_is_pinned_to_a_range_and_builds_without_a_warning(dists: Dists) -> None:
    """One backend, bounded above and below; the build prints no warning (a deprecation shows first as one)."""
    (requirement,) = PYPROJECT["build-system"]["requires"]
    assert re.fullmatch(r"setuptools>=[\d.]+,<[\d.]+", requirement), requirement
    assert not A_WARNING.findall(dists.build_log), dists.build_log


def test_the_license_is_an_spdx_expression(dists: Dists) -> None:
    """pyproject says Apache-2.0 as an SPDX string, and the wheel's metadata carries it as such."""
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    files = wheel_files(dists.wheel)
    metadata = files[f"fleetlab-{PYPROJECT['project']['version']}.dist-info/METADATA"]
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    shipped = files[f"fleetlab-{PYPROJECT['project']['version']}.dist-info/licenses/LICENSE"]
    assert shipped == (REPO / "LICENSE").read_text() and "Apache License" in shipped


def test_the_wheel_and_the_sdist_hold_every_file_of_the_package(dists: Dists) -> None:
    """Every file under src/fleetlab (its data too) is in the sdist and the wheel, and nothing else of the project."""
    package = {path.relative_to(REPO / "src").as_posix() for path in (REPO / "src" / "fleetlab").rglob("*")
               if path.is_file() and "__pycache__" not in path.parts}
    in_wheel = {name for name in wheel_files(dists.wheel) if ".dist-info/" not in name}
    with tarfile.open(dists.sdist) as archive:
        in_sdist = {name.split("/src/", 1)[1] for name in archive.getnames()
                    if "/src/fleetlab/" in name and archive.getmember(name).isfile()}
    assert in_wheel == package
    assert in_sdist == package


# --- the installed wheel -----------------------------------------------------------


def test_the_wheel_alone_runs_the_demo(wheel_env: WheelEnv) -> None:
    """``fleetlab demo``, the wheel's own command, runs the pipeline end to end with nothing lost."""
    done = wheel_env.run("fleetlab", "demo", "--events", "2", "--orchestrated", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 steps: 3 effects, 0 duplicated, 0 lost, 0 unsettled" in done.stdout


def test_the_wheel_alone_runs_lab_00s_public_checks(wheel_env: WheelEnv) -> None:
    """Each check of lab 00, given its reference answer, passes its public cases and runs no hidden one."""
    references = {check.id: side_of(check.id).reference for check in checks_of("00")}
    code = """if True:
        import json, sys
        import fleetlab
        results = {check_id: fleetlab.check(check_id, answer) for check_id, answer in json.loads(sys.argv[1]).items()}
        print(json.dumps({check_id: [str(r.status), [c.hidden for c in r.cases]] for check_id, r in results.items()}))
    """
    done = wheel_env.python_code(code, json.dumps(references))
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(results) == set(references) and references
    for check_id, (status, hidden) in results.items():
        assert status == "public pass", (check_id, done.stdout)
        assert hidden and not any(hidden), check_id


def test_the_wheel_env_imports_fleetlab_from_the_wheel_and_neither_the_instructor_side_nor_the_tooling(
    wheel_env: WheelEnv,
) -> None:
    """fleetlab comes from the venv's site-packages; fleetlab_instructor and fleetlab_tools are not there."""
    done = wheel_env.python_code("import fleetlab; print(fleetlab.__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(wheel_env.root)
    for package in ("fleetlab_instructor", "fleetlab_tools"):
        done = wheel_env.python_code(f"import {package}")
        assert done.returncode != 0 and f"No module named '{package}'" in done.stderr, done.stderr


# --- what the wheel must not hold --------------------------------------------------


def test_the_wheel_holds_no_module_of_the_instructor_side_or_the_tooling(dists: Dists) -> None:
    tops = {name.split("/", 1)[0] for name in wheel_files(dists.wheel)}
    assert tops == {"fleetlab", f"fleetlab-{PYPROJECT['project']['version']}.dist-info"}


def specific(text: Any) -> bool:
    """True for a text that could only come from where it was written: three words or more.

    A one- or two-word name ("rules", "work queues") is the exercise's public vocabulary: lab 00
    asks for the plane of every component, so its question names the hidden ones too.
    """
    return isinstance(text, str) and len(text.split()) >= 3


def definition_line(answer: Any) -> str | None:
    """The first line of a named answer's definition (``def name(args):``), None for what is no secret.

    No secret: a lambda, a built-in, a plain value.
    """
    if not (inspect.isfunction(answer) or inspect.isclass(answer)) or answer.__name__ == "<lambda>":
        return None
    lines, _ = inspect.getsourcelines(answer)
    return next(line.strip() for line in lines if line.lstrip().startswith(("def ", "async def ", "class ")))


def secrets_of(check_id: str) -> dict[str, str]:
    """What of ``check_id``'s instructor side a learner must not get: each text, and what it is."""
    side = side_of(check_id)
    found: dict[str, str] = {}
    for case in side.hidden:
        for field in dataclasses.fields(case):
            value = getattr(case, field.name)
            if specific(value):
                found[value] = f"hidden case {case.name!r} ({field.name})"
    for kind, catalogue in (("right answer", side.right_answers), ("wrong answer", side.wrong_answers)):
        for entry in catalogue:
            if line := definition_line(entry.answer):
                found[line] = f"the {kind} {entry.name!r}"
    if line := definition_line(side.reference):
        found[line] = "the reference answer"
    return found


@pytest.mark.parametrize("lab", shipped_labs())
def test_the_wheel_holds_no_text_of_a_hidden_case_reference_or_catalogue(dists: Dists, lab: str) -> None:
    """No hidden case's name (or other text), reference, right or wrong answer of the lab's checks is in any
    file of the wheel: they are the instructor's (fleetlab_instructor.checks)."""
    files = wheel_files(dists.wheel)
    secrets = {text: f"{check.id}: {what}" for check in checks_of(lab) for text, what in secrets_of(check.id).items()}
    assert secrets, f"lab {lab}'s checks have no instructor's side to look for"
    leaks = [f"{what} is in {name}" for text, what in secrets.items() for name, content in files.items()
             if text in content]
    assert not leaks, "\n".join(leaks)


def test_the_search_finds_each_text_where_the_instructor_wrote_it() -> None:
    """The search is not blind: every text it looks for in lab 00's checks is in the instructor's lab 00 files."""
    written = "\n".join(path.read_text() for path in (Path(instructor_checks.__file__).parent / "lab00").rglob("*.py"))
    for check in checks_of("00"):
        secrets = secrets_of(check.id)
        assert secrets and [text for text in secrets if text not in written] == []


def test_the_venv_imports_jsonschema_without_the_slow_iri_checker():
    """make venv leaves rfc3987-syntax out: importing it would cost every kernel and CLI call 2 s (Makefile)."""
    probe = "import sys, jsonschema._format; print('rfc3987_syntax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"

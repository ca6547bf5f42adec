"""The other ways to install the course stay in step with pyproject.toml.

``environment.yml`` (conda) must carry the pins of the three distributions' pyproject.toml files exactly.
The Docker files, the dev container and the CI workflows: ``tests/test_deploy_files.py``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


# --- loading ---------------------------------------------------------------------


DISTRIBUTIONS = ("pyproject.toml", "tools/pyproject.toml", "instructor/pyproject.toml")
"""The library's, the tooling's and the instructor's pyproject.toml: one environment installs all three."""


@pytest.fixture(scope="module")
def pyproject() -> dict:
    """pyproject.toml, parsed."""
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def distribution_pins() -> list[str]:
    """Every third-party requirement of the three distributions: dependencies and all optional extras."""
    pins = []
    for path in DISTRIBUTIONS:
        pins.extend(project_pins(tomllib.loads((REPO / path).read_text())))
    return [pin for pin in pins if not requirement_name(pin).startswith("fleetlab")]


@pytest.fixture(scope="module")
def conda_env() -> dict:
    """environment.yml, parsed."""
    return yaml.safe_load((REPO / "environment.yml").read_text())


def project_pins(pyproject: dict) -> list[str]:
    """Every requirement of the project: dependencies and all optional extras."""
    project = pyproject["project"]
    pins = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        pins.extend(extra)
    return pins


def requirement_name(requirement: str) -> str:
    """The normalised distribution name of a requirement ("moto[server]==1" -> "moto")."""
    name = re.split(r"[\[<>=!~;@ ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def conda_pip_section(conda_env: dict) -> list[str]:
    """The ``pip:`` list inside the conda dependencies."""
    sections = [dep["pip"] for dep in conda_env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    assert len(sections) == 1, "environment.yml needs exactly one pip: section"
    return sections[0]


def conda_packages(conda_env: dict) -> list[str]:
    """The conda (non-pip) dependencies, as written."""
    return [dep for dep in conda_env["dependencies"] if isinstance(dep, str)]


# --- environment.yml -------------------------------------------------------------


def test_conda_env_is_named_fleetlab(conda_env: dict) -> None:
    """The environment is called fleetlab, as the README's activate command says."""
    assert conda_env["name"] == "fleetlab"


def test_conda_python_is_311_and_within_requires_python(conda_env: dict, pyproject: dict) -> None:
    """Python is pinned to 3.11, which pyproject's requires-python admits."""
    pythons = [dep for dep in conda_packages(conda_env) if requirement_name(dep) == "python"]
    assert pythons == ["python=3.11"]
    minimum = re.fullmatch(r">=\s*(\d+)\.(\d+)", pyproject["project"]["requires-python"])
    assert minimum, "requires-python is expected to be a plain lower bound"
    assert (3, 11) >= (int(minimum[1]), int(minimum[2]))


def test_conda_env_installs_pip(conda_env: dict) -> None:
    """pip is a conda dependency, so the pip: section can run."""
    assert "pip" in conda_packages(conda_env)


def test_every_pyproject_pin_is_in_the_conda_env(conda_env: dict) -> None:
    """Each pin of the three pyproject files (dependencies and extras) appears, identical, in pip:."""
    pip_section = set(conda_pip_section(conda_env))
    missing = [pin for pin in distribution_pins() if pin not in pip_section]
    assert not missing, f"environment.yml lacks or differs on: {missing}"


def test_conda_env_pins_nothing_pyproject_does_not(conda_env: dict) -> None:
    """No package is pinned in environment.yml alone, or pinned twice."""
    pinned = [req for req in conda_pip_section(conda_env) if not req.startswith("-")]
    assert sorted(pinned) == sorted(distribution_pins())


def test_every_third_party_requirement_is_pinned() -> None:
    """A distribution names each package it needs at one exact version (``name==version``)."""
    unpinned = [pin for pin in distribution_pins() if "==" not in pin]
    assert not unpinned, f"pin these to the version installed and tested: {unpinned}"


def test_conda_env_installs_the_project_with_its_extras(conda_env: dict, pyproject: dict) -> None:
    """The pip section installs this folder, editable, with every extra."""
    extras = ",".join(pyproject["project"]["optional-dependencies"])
    assert f"-e .[{extras}]" in conda_pip_section(conda_env)

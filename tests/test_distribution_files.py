"""The other ways to install and run the course stay in step with pyproject.toml.

``environment.yml`` (conda) must carry the pins of the three distributions' pyproject.toml files exactly; ``docker-compose.yml``
must pin its images, publish ports on loopback only, keep secrets out of the file, and
set the environment variables that ``fleetlab.backends.backend`` reads. Docker is not needed:
the files are parsed, not run.
"""

from __future__ import annotations

import re
import socket
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LOCALSTACK_SERVICES = {"sqs", "events", "stepfunctions", "dynamodb", "s3", "sts"}
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|ACCESS_KEY|API_KEY", re.IGNORECASE)
INTERPOLATION = re.compile(r"^\$\{[A-Z_][A-Z0-9_]*(:?-)?\}$")


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


@pytest.fixture(scope="module")
def compose() -> dict:
    """docker-compose.yml, parsed."""
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


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


def environment_of(service: dict) -> dict[str, str]:
    """A service's environment as a dict, from either the mapping or the list form."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def host_ips(service: dict) -> list[str]:
    """The host address of each published port (short or long syntax)."""
    ips = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            ips.append(str(port.get("host_ip", "")))
        else:
            parts = str(port).split(":")
            ips.append(parts[0] if len(parts) == 3 else "")
    return ips


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


# --- docker-compose.yml ----------------------------------------------------------


def test_compose_has_the_localstack_and_lab_services(compose: dict) -> None:
    """Two services: the emulator and the lab."""
    assert set(compose["services"]) == {"localstack", "lab"}


def test_compose_images_are_pinned(compose: dict) -> None:
    """Every image names a tag, and none is `latest`."""
    for name, service in compose["services"].items():
        image = service["image"]
        assert ":" in image.rsplit("/", 1)[-1], f"{name}: image {image} has no tag"
        assert not image.endswith(":latest"), f"{name}: image {image} is not pinned"


def test_localstack_image_is_a_release(compose: dict) -> None:
    """LocalStack is pinned to a full calendar release (YYYY.M.PATCH)."""
    image = compose["services"]["localstack"]["image"]
    assert re.fullmatch(r"localstack/localstack:\d{4}\.\d{1,2}\.\d+", image), image


def test_lab_image_is_python_311(compose: dict) -> None:
    """The lab runs on the Python that environment.yml and CI use."""
    assert compose["services"]["lab"]["image"].startswith("python:3.11")


def test_compose_ports_are_bound_to_loopback(compose: dict) -> None:
    """Every published port listens on 127.0.0.1 only."""
    for name, service in compose["services"].items():
        assert service.get("ports"), f"{name} publishes no port"
        assert set(host_ips(service)) == {"127.0.0.1"}, f"{name}: {service['ports']}"


def test_compose_publishes_the_expected_ports(compose: dict) -> None:
    """LocalStack on 4566, JupyterLab on 8888."""
    assert compose["services"]["localstack"]["ports"] == ["127.0.0.1:4566:4566"]
    assert compose["services"]["lab"]["ports"] == ["127.0.0.1:8888:8888"]


def test_compose_holds_no_literal_secret(compose: dict) -> None:
    """A variable named like a secret is only ever read from the environment."""
    for name, service in compose["services"].items():
        for key, value in environment_of(service).items():
            if SECRET_NAME.search(key):
                assert INTERPOLATION.match(value), f"{name}: {key} holds a literal value"


def test_localstack_reads_its_auth_token_from_the_environment(compose: dict) -> None:
    """LOCALSTACK_AUTH_TOKEN is passed through, empty when unset, with a comment why."""
    env = environment_of(compose["services"]["localstack"])
    assert env["LOCALSTACK_AUTH_TOKEN"] == "${LOCALSTACK_AUTH_TOKEN:-}"
    text = (REPO / "docker-compose.yml").read_text()
    assert re.search(r"#.*auth token", text, re.IGNORECASE), "explain why the token is needed"


def test_localstack_starts_the_services_the_course_uses(compose: dict) -> None:
    """SERVICES lists queues, buses, state machines, tables, buckets and STS."""
    services = environment_of(compose["services"]["localstack"])["SERVICES"]
    assert set(services.split(",")) == LOCALSTACK_SERVICES


def test_lab_points_the_library_at_localstack(compose: dict) -> None:
    """The lab selects the localstack backend and reaches LocalStack by service name."""
    env = environment_of(compose["services"]["lab"])
    assert env["FLEETLAB_BACKEND"] == "localstack"
    assert env["LOCALSTACK_ENDPOINT"] == "http://localstack:4566"


def test_the_library_reads_the_variables_compose_sets(compose: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's variables, by the names compose sets, steer fleetlab.open_backend.

    The endpoint's host is swapped for a closed loopback port, so the backend must
    fail to reach exactly that address: proof that both names are read.
    """
    from fleetlab.backends.backend import open_backend
    from fleetlab.core.errors import BackendUnavailable

    closed = _closed_loopback_url()
    for key, value in environment_of(compose["services"]["lab"]).items():
        monkeypatch.setenv(key, closed if key == "LOCALSTACK_ENDPOINT" else value)
    with pytest.raises(BackendUnavailable, match=re.escape(closed)):
        open_backend()


def _closed_loopback_url() -> str:
    """http://127.0.0.1:PORT for a port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_lab_installs_the_project_and_serves_labs(compose: dict) -> None:
    """The lab installs this folder and starts JupyterLab rooted at labs/."""
    lab = compose["services"]["lab"]
    assert ".:/fleetlab" in lab["volumes"] and lab["working_dir"] == "/fleetlab"
    command = lab["command"] if isinstance(lab["command"], str) else " ".join(lab["command"])
    assert re.search(r"pip install .*-e '?\.\[lab\]", command), command
    assert "jupyter lab" in command and "--ServerApp.root_dir=labs" in command
    assert "--port=8888" in command


def test_lab_waits_for_a_healthy_localstack(compose: dict) -> None:
    """The lab starts once LocalStack answers its health check."""
    assert compose["services"]["lab"]["depends_on"]["localstack"]["condition"] == "service_healthy"
    assert "_localstack/health" in str(compose["services"]["localstack"]["healthcheck"]["test"])

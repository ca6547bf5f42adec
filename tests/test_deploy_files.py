"""The files that deploy the course: the lab image, the compose file, the dev container and CI.

Docker cannot run on these machines, so nothing here builds an image or starts a container.
hadolint lints both images' Dockerfiles (the lab's ``Dockerfile`` and the grader's
``deploy/grading/Dockerfile``) and actionlint every workflow (both from the test extra);
``.devcontainer/devcontainer.json`` is validated against ``tests/schemas/devcontainer.schema.json``
(written from the Dev Container reference: no copy of the official schema installs from PyPI);
each build context is computed from its ignore file and checked against what its Dockerfile copies
(the lab's holds no answers, the grader's the instructor's package and nothing else); and every file is
checked against what it must agree with: ``docs/backends.md``, the LocalStack tooling, the
Makefile, the settings the library reads and the student notebooks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from packaging.version import Version

from fleetlab.core.settings import SERVED_APART, Settings
from fleetlab_tools.localstack import host

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
GRADER_DOCKERFILE = REPO / "deploy" / "grading" / "Dockerfile"
GRADER_DOCKERIGNORE = GRADER_DOCKERFILE.with_name("Dockerfile.dockerignore")
COMPOSE = REPO / "docker-compose.yml"
DEVCONTAINER = REPO / ".devcontainer" / "devcontainer.json"
DEVCONTAINER_SCHEMA = REPO / "tests" / "schemas" / "devcontainer.schema.json"
WORKFLOWS = REPO / ".github" / "workflows"
RELEASE_TEMPLATE = REPO / "instructor" / "src" / "fleetlab_instructor" / "release_template"
GRADE_WORKFLOW = RELEASE_TEMPLATE / ".github" / "workflows" / "grade.yml"
SOLUTION_MARKER = "BEGIN SOLUTION"
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|ACCESS_KEY|API_KEY", re.IGNORECASE)
INTERPOLATION = re.compile(r"^\$\{[A-Z_][A-Z0-9_]*(:?-)?\}$")
TOOL_TIMEOUT = 60
"""Seconds for one run of hadolint or actionlint (each takes well under one)."""


# --- shared readers --------------------------------------------------------------------


def tool(name: str) -> str:
    """The path of a linter from the test extra: beside this Python first, then on PATH; fails when missing."""
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if found is None:
        pytest.fail(f"{name} is not installed: it comes with the test extra (pip install -e '.[test]', or make venv)")
    return found


def run_tool(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a linter with no user configuration in reach (its HOME and config folder are ``cwd``)."""
    env = {**os.environ, "HOME": str(cwd), "XDG_CONFIG_HOME": str(cwd), "NO_COLOR": "1"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT)


def makefile_default(variable: str) -> str:
    """The default the Makefile gives ``variable`` (``NAME ?= value``)."""
    match = re.search(rf"^{variable}\s*\?=\s*(\S+)\s*$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert match, f"the Makefile sets no default for {variable}"
    return match[1]


def conda_python() -> str:
    """The Python version environment.yml pins (``python=3.11`` -> ``3.11``)."""
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pins = [dep for dep in env["dependencies"] if isinstance(dep, str) and dep.startswith("python=")]
    assert len(pins) == 1, pins
    return pins[0].split("=", 1)[1]


def project_version() -> str:
    """The fleetlab distribution's version, from pyproject.toml."""
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def student_notebooks() -> list[Path]:
    """The student notebooks, ``labs/NN_*.ipynb``."""
    notebooks = sorted((REPO / "labs").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks, "no student notebook in labs/"
    return notebooks


def check_ids(notebook: Path) -> set[str]:
    """The checks a notebook calls, ``check("01.heartbeat", ...)``, read from its code cells."""
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
    return set(re.findall(r"""\bcheck\(\s*["'](\d\d\.\w+)["']""", code))


# --- the Dockerfile --------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pending = f"{pending} {stripped}" if pending else stripped
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        keyword, _, arguments = pending.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        pending = ""
    return instructions


def exec_form(arguments: str) -> list[str]:
    """A JSON-array instruction's arguments (``CMD ["a", "b"]``); fails on the shell form."""
    assert arguments.startswith("["), f"use the exec form (a JSON array), not the shell form: {arguments}"
    return json.loads(arguments)


@pytest.fixture(scope="module")
def instructions() -> list[tuple[str, str]]:
    return dockerfile_instructions(DOCKERFILE.read_text())


def arguments_of(instructions: list[tuple[str, str]], keyword: str) -> list[str]:
    return [arguments for name, arguments in instructions if name == keyword]


@pytest.mark.parametrize("dockerfile", [DOCKERFILE, GRADER_DOCKERFILE], ids=["lab", "grader"])
def test_hadolint_passes_the_dockerfile(tmp_path: Path, dockerfile: Path) -> None:
    """hadolint finds nothing, down to its style rules, and no inline pragma may silence one."""
    done = run_tool([tool("hadolint"), "--no-color", "--disable-ignore-pragma", "--failure-threshold", "style",
                     str(dockerfile)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_make_test_lints_every_dockerfile_of_the_repository() -> None:
    """`make test` runs `lint-dockerfiles` first, and its DOCKERFILES are every Dockerfile git tracks."""
    makefile = (REPO / "Makefile").read_text()
    listed = re.search(r"^DOCKERFILES\s*:=\s*(.+)$", makefile, re.MULTILINE)
    assert listed, "the Makefile names no DOCKERFILES"
    tracked = subprocess.run(["git", "ls-files", "--", "Dockerfile", "*/Dockerfile"], cwd=REPO, capture_output=True,
                             text=True, timeout=TOOL_TIMEOUT, check=True).stdout.split()
    assert sorted(listed[1].split()) == sorted(tracked) == sorted(
        path.relative_to(REPO).as_posix() for path in (DOCKERFILE, GRADER_DOCKERFILE))
    assert re.search(r"^test:.*\blint-dockerfiles\b", makefile, re.MULTILINE)


def test_hadolint_refuses_an_unpinned_image_installed_as_root(tmp_path: Path) -> None:
    """The linter really runs: `latest` and an unpinned pip install are reported by their rule codes."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install jupyterlab\nCMD jupyter lab\n")
    done = run_tool([tool("hadolint"), "--no-color", str(bad)], cwd=tmp_path)
    assert done.returncode != 0
    assert "DL3007" in done.stdout and "DL3013" in done.stdout, done.stdout


def test_the_dockerfile_reader_joins_continuations_and_drops_comments() -> None:
    text = "# a comment\nFROM x:1\nRUN a \\\n    && b\n\n# another\nUSER 1000:1000\n"
    assert dockerfile_instructions(text) == [("FROM", "x:1"), ("RUN", "a && b"), ("USER", "1000:1000")]


def test_the_base_image_is_an_exact_python_release(instructions: list[tuple[str, str]]) -> None:
    """One stage, from python:X.Y.Z-slim (optionally by digest), X.Y being environment.yml's Python."""
    (base,) = arguments_of(instructions, "FROM")
    match = re.fullmatch(r"python:(\d+\.\d+)\.\d+-slim(?:-[a-z]+)?(?:@sha256:[0-9a-f]{64})?", base)
    assert match, f"pin the base to an exact release (python:3.11.N-slim-...), not {base!r}"
    assert match[1] == conda_python()


@pytest.mark.parametrize("dockerfile", [DOCKERFILE, GRADER_DOCKERFILE], ids=["lab", "grader"])
def test_the_image_runs_as_an_unprivileged_user(dockerfile: Path) -> None:
    """The last USER, before the command, is neither root nor uid 0, and is the uid the image creates."""
    instructions = dockerfile_instructions(dockerfile.read_text())
    keywords = [name for name, _ in instructions]
    users = arguments_of(instructions, "USER")
    assert users, "the image runs as root: add a USER"
    last_user = max(index for index, name in enumerate(keywords) if name == "USER")
    assert last_user < keywords.index("CMD")
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    created = re.search(r"useradd\b.*--uid (\d+)", " ".join(arguments_of(instructions, "RUN")))
    assert created and created[1] == user, "USER names the uid the useradd line creates"


def test_nothing_is_installed_when_the_container_starts(instructions: list[tuple[str, str]]) -> None:
    """pip runs at build time only: the command and any entry point start JupyterLab and nothing else."""
    assert "pip install" in " ".join(arguments_of(instructions, "RUN"))
    for keyword in ("CMD", "ENTRYPOINT"):
        for arguments in arguments_of(instructions, keyword):
            assert "pip" not in arguments and "install" not in arguments, f"{keyword} {arguments}"


def test_jupyterlab_serves_the_labs_on_the_lab_port(instructions: list[tuple[str, str]]) -> None:
    """JupyterLab on the image's labs/, on the Makefile's port, on the container's interfaces."""
    (command,) = arguments_of(instructions, "CMD")
    argv = exec_form(command)
    port = makefile_default("LAB_PORT")
    assert argv[:2] == ["jupyter", "lab"]
    assert "--ip=0.0.0.0" in argv, "a published port reaches the container's interface, never its loopback"
    assert f"--port={port}" in argv and arguments_of(instructions, "EXPOSE") == [port]
    root = next(arg.split("=", 1)[1] for arg in argv if arg.startswith("--ServerApp.root_dir="))
    assert arguments_of(instructions, "WORKDIR")[-1] == root and root.endswith("/labs")
    assert any(arguments.split()[-1] == root for arguments in arguments_of(instructions, "COPY")
               if arguments.split()[-2] == "labs"), "the student notebooks are copied to the served folder"


def test_the_image_defaults_to_the_moto_backend(instructions: list[tuple[str, str]]) -> None:
    """FLEETLAB_BACKEND=moto, a value the library's settings accept."""
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(arguments_of(instructions, "ENV"))))
    assert env["FLEETLAB_BACKEND"] == "moto"
    assert Settings.from_env({"FLEETLAB_BACKEND": env["FLEETLAB_BACKEND"]}).backend == "moto"


def test_the_image_installs_the_library_with_the_lab_extra_and_the_tooling(
        instructions: list[tuple[str, str]]) -> None:
    """One pip install of the fleetlab distribution with [lab] and of tools/; nothing of the instructor's side."""
    (install,) = [run for run in arguments_of(instructions, "RUN") if "pip install" in run]
    assert re.search(r"""["']?\S*fleetlab\[lab\]["']?""", install) and re.search(r"\S*/tools\b", install)
    assert "instructor" not in " ".join(arguments for _, arguments in instructions)


# --- the build context (.dockerignore) -------------------------------------------------


def ignore_rules(text: str) -> list[tuple[re.Pattern[str], bool]]:
    """.dockerignore's rules in order, as (pattern, is_exception), with Docker's wildcard meaning.

    ``*`` and ``?`` stay within one path element, ``**`` spans any number of them, a leading
    ``/`` is dropped and ``!`` makes an exception. A rule matches a path or any folder above it.
    """
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        regex = ""
        for part in re.split(r"(\*\*/|\*\*|\*|\?)", pattern):
            regex += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
        rules.append((re.compile(regex), exception))
    return rules


def is_excluded(path: str, rules: list[tuple[re.Pattern[str], bool]]) -> bool:
    """Whether ``path`` (relative, with /) is left out of the build context: the last matching rule decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
    excluded = False
    for regex, exception in rules:
        if any(regex.fullmatch(candidate) for candidate in candidates):
            excluded = not exception
    return excluded


def build_context(root: Path, rules: list[tuple[re.Pattern[str], bool]]) -> set[str]:
    """Every file `docker build` would send from ``root``, skipping folders no exception can reach."""
    exceptions = [regex.pattern for regex, exception in rules if exception]

    def reachable(folder: str) -> bool:
        """Whether an exception could take back something inside ``folder`` (one opening with a wildcard could)."""
        return any(pattern.startswith((re.escape(folder), "(", "[", ".")) for pattern in exceptions)

    sent = set()
    for folder, subfolders, files in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        prefix = "" if relative == "." else f"{relative}/"
        subfolders[:] = [name for name in subfolders
                         if not is_excluded(prefix + name, rules) or reachable(prefix + name)]
        sent.update(prefix + name for name in files if not is_excluded(prefix + name, rules))
    return sent


@pytest.fixture(scope="module")
def context() -> set[str]:
    return build_context(REPO, ignore_rules(DOCKERIGNORE.read_text()))


@pytest.mark.parametrize(
    ("rules", "path", "excluded"),
    [
        ("*\n!src/\n", "src/fleetlab/core/clock.py", False),
        ("*\n!src/\n", "tests/conftest.py", True),
        ("*\n!labs/*.ipynb\n", "labs/01_at_least_once.ipynb", False),
        ("*\n!labs/*.ipynb\n", "labs/solutions/01_at_least_once.ipynb", True),
        ("*/temp*\n", "somedir/temporary.txt", True),
        ("*/temp*\n", "somedir/sub/temporary.txt", False),
        ("**/__pycache__\n", "src/fleetlab/__pycache__/x.pyc", True),
        ("*.md\n!README*.md\nREADME-secret.md\n", "README-secret.md", True),
        ("*.md\n!README*.md\nREADME-secret.md\n", "README.md", False),
    ],
)
def test_the_dockerignore_reader_follows_dockers_rules(rules: str, path: str, excluded: bool) -> None:
    """Docker's documented examples, and the allow-list form this repository uses."""
    assert is_excluded(path, ignore_rules(rules)) is excluded


def test_the_build_context_holds_no_answers(context: set[str]) -> None:
    """No instructor notebook, instructor package, test, facilitator note or local state reaches the image."""
    forbidden = ("labs/solutions/", "instructor/", "tests/", "docs/", ".venv/", ".localstack/", ".fleetlab/",
                 ".git/", "bench/", "dist/", "build/")
    leaked = sorted(path for path in context if path.startswith(forbidden) or "/.ipynb_checkpoints/" in path)
    assert not leaked, leaked
    with_answers = sorted(path for path in context if path.endswith((".ipynb", ".py"))
                          and SOLUTION_MARKER in (REPO / path).read_text(encoding="utf-8", errors="replace"))
    assert not with_answers, f"solution text in the build context: {with_answers}"


def test_the_build_context_holds_what_the_dockerfile_copies(context: set[str],
                                                            instructions: list[tuple[str, str]]) -> None:
    """Each COPY source is sent (or the build fails), and so is every student notebook."""
    for arguments in arguments_of(instructions, "COPY"):
        words = [word for word in arguments.split() if not word.startswith("--")]
        for source in words[:-1]:
            assert any(path == source or path.startswith(f"{source}/") for path in context), \
                f"COPY {source}: .dockerignore leaves it out"
    assert {"src/fleetlab/__init__.py", "tools/pyproject.toml"} <= context
    assert {f"labs/{notebook.name}" for notebook in student_notebooks()} <= context


# --- the grader's image (deploy/grading/Dockerfile and its own ignore file) -----------------------------


@pytest.fixture(scope="module")
def grader_instructions() -> list[tuple[str, str]]:
    return dockerfile_instructions(GRADER_DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def grader_context() -> set[str]:
    return build_context(REPO, ignore_rules(GRADER_DOCKERIGNORE.read_text()))


def copy_sources(instructions: list[tuple[str, str]]) -> list[str]:
    """The context paths a Dockerfile's COPY instructions read (every word but the last and the --flags)."""
    sources = []
    for arguments in arguments_of(instructions, "COPY"):
        words = [word for word in arguments.split() if not word.startswith("--")]
        sources += words[:-1]
    return sources


def tracked_files_under(sources: list[str]) -> set[str]:
    """The files git tracks at or under ``sources``: what a clean checkout would send for them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", *sources], cwd=REPO, capture_output=True, text=True,
                            timeout=TOOL_TIMEOUT, check=True).stdout
    return {path for path in listed.split("\0") if path}


def test_the_grader_ignore_file_is_the_one_buildkit_reads_for_its_dockerfile() -> None:
    """BuildKit takes ``<Dockerfile>.dockerignore`` beside the Dockerfile given with -f before the context's
    .dockerignore; the lab's Dockerfile has no such file, so the lab image keeps reading .dockerignore."""
    assert GRADER_DOCKERIGNORE.name == f"{GRADER_DOCKERFILE.name}.dockerignore" and GRADER_DOCKERIGNORE.is_file()
    assert not DOCKERFILE.with_name(f"{DOCKERFILE.name}.dockerignore").exists()
    assert f"docker build -f {GRADER_DOCKERFILE.relative_to(REPO)} " in GRADER_DOCKERFILE.read_text()


def test_the_grader_context_is_exactly_what_its_dockerfile_copies(grader_context: set[str],
                                                                   grader_instructions) -> None:
    """Every file git tracks under a COPY source is sent (the instructor's package among them), and nothing
    outside the COPY sources is: no labs/, no solutions, no tests, no local state."""
    sources = copy_sources(grader_instructions)
    assert "instructor" in sources
    outside = sorted(path for path in grader_context
                     if not any(path == source or path.startswith(f"{source}/") for source in sources))
    assert not outside, f"sent but never copied: {outside}"
    missing = sorted(tracked_files_under(sources) - grader_context)
    assert not missing, f"copied but left out of the context: {missing}"
    assert {"instructor/pyproject.toml", "instructor/src/fleetlab_instructor/__init__.py",
            "instructor/src/fleetlab_instructor/grade/grade.py"} <= grader_context
    leaked = sorted(path for path in grader_context
                    if "/__pycache__/" in path or ".egg-info/" in path or path.startswith(("labs/", ".venv/")))
    assert not leaked, leaked


def test_the_lab_context_still_holds_no_instructor_package(context: set[str], grader_context: set[str]) -> None:
    """The grader's ignore file lets the instructor's package in for the grader only."""
    instructor = {path for path in grader_context if path.startswith("instructor/")}
    assert instructor and not instructor & context


def test_the_grader_installs_the_course_with_its_instructors_side_not_editable(grader_instructions) -> None:
    """One pip install of the library, its tooling and the instructor's package, from the copied sources:
    not editable, so the sandbox can hide the installed instructor package from learner processes."""
    (install,) = [run for run in arguments_of(grader_instructions, "RUN") if "pip install" in run]
    words = install.split("&&")[0].split()
    assert words[:2] == ["pip", "install"]
    assert set(words[2:]) == {"/tmp/fleetlab", "/tmp/fleetlab/tools", "/tmp/fleetlab/instructor"}


def test_the_grader_and_the_lab_run_one_python_release(instructions, grader_instructions) -> None:
    """A notebook is graded on the Python it was written on."""
    assert arguments_of(grader_instructions, "FROM") == arguments_of(instructions, "FROM")


# --- docker-compose.yml ----------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def environment_of(service: dict) -> dict[str, str]:
    """A service's environment as a dict, from either the mapping or the list form."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {key: "" if value is None else str(value) for key, value in env.items()}


def published(service: dict) -> list[tuple[str, str, str]]:
    """Each published port as (host address, host port, container port); '' where the entry leaves one out."""
    ports = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            ports.append((str(port.get("host_ip", "")), str(port.get("published", "")), str(port["target"])))
        else:
            parts = str(port).split(":")
            ports.append(tuple([""] * (3 - len(parts)) + parts))
    return ports


def docs_localstack_table() -> dict[str, tuple[str, str]]:
    """docs/backends.md's table of the two LocalStack routes: row name -> (without Docker, with Docker)."""
    rows = {}
    for line in (REPO / "docs" / "backends.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = (cells[1], cells[2])
    assert "LocalStack" in rows, "docs/backends.md lost its table of the two LocalStack routes"
    return rows


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_compose_runs_localstack_moto_and_the_lab(compose: dict) -> None:
    assert set(compose["services"]) == {"localstack", "moto", "lab"}


def test_the_lab_and_moto_run_the_image_the_dockerfile_builds(compose: dict) -> None:
    """Both build this folder's Dockerfile and tag it with the library's version; never `latest`."""
    for name in ("lab", "moto"):
        service = compose["services"][name]
        assert service["build"] == {"context": ".", "dockerfile": "Dockerfile"}, name
        assert service["image"] == f"fleetlab-lab:{project_version()}", name


def test_the_localstack_image_is_the_one_docs_backends_names(compose: dict) -> None:
    """docs/backends.md's table names the compose file's image, and it is the release the tooling installs."""
    image = compose["services"]["localstack"]["image"]
    match = re.fullmatch(r"localstack/localstack:(\d{4}\.\d{2}\.\d+)", image)
    assert match, f"pin LocalStack to a calendar release (YYYY.MM.PATCH), not {image!r}"
    without_docker, with_docker = docs_localstack_table()["LocalStack"]
    assert f"image `{image}`" in with_docker
    assert f"`localstack-core=={host.RELEASE}`" in without_docker
    assert Version(match[1]) == Version(host.RELEASE), "Docker's route and the no-Docker route run one release"


def test_localstack_serves_what_docs_backends_and_the_tooling_say(compose: dict) -> None:
    """SERVICES is the no-Docker route's list, and the docs' table gives it for both routes."""
    services = environment_of(compose["services"]["localstack"])["SERVICES"]
    assert services.split(",") == list(host.LOCALSTACK_SERVICES)
    for route in docs_localstack_table()["LocalStack serves (`SERVICES`)"]:
        assert code_spans(route)[0] == services, route


def test_moto_serves_dynamodb_and_s3_on_the_tooling_port(compose: dict) -> None:
    """The moto service listens on 4567, as `make localstack-up`'s does, and the lab reads both services there."""
    moto = compose["services"]["moto"]
    assert moto["command"] == ["python", "-m", "moto.server", "-H", "0.0.0.0", "-p", str(host.MOTO_PORT)]
    env = environment_of(compose["services"]["lab"])
    assert {env[SERVED_APART[service]] for service in host.MOTO_SERVICES} == {f"http://moto:{host.MOTO_PORT}"}


def test_compose_publishes_every_port_on_loopback_only(compose: dict) -> None:
    """LocalStack on 4566, moto on 4567, JupyterLab on the lab port: on the host's 127.0.0.1 and nowhere else."""
    lab_port = makefile_default("LAB_PORT")
    expected = {"localstack": [("127.0.0.1", "4566", "4566")],
                "moto": [("127.0.0.1", str(host.MOTO_PORT), str(host.MOTO_PORT))],
                "lab": [("127.0.0.1", lab_port, lab_port)]}
    assert {name: published(service) for name, service in compose["services"].items()} == expected


def test_compose_holds_no_literal_secret(compose: dict) -> None:
    """A variable named like a secret is only ever read from the environment."""
    for name, service in compose["services"].items():
        for key, value in environment_of(service).items():
            if SECRET_NAME.search(key):
                assert INTERPOLATION.match(value), f"{name}: {key} holds a literal value"


def test_localstack_reads_the_token_docs_backends_names(compose: dict) -> None:
    """LOCALSTACK_AUTH_TOKEN is passed through (empty when unset), and the docs name it for the Docker route only."""
    env = environment_of(compose["services"]["localstack"])
    assert env["LOCALSTACK_AUTH_TOKEN"] == "${LOCALSTACK_AUTH_TOKEN:-}"
    assert re.search(r"#.*auth token", COMPOSE.read_text(), re.IGNORECASE), "say why the token is needed"
    without_docker, with_docker = docs_localstack_table()["auth token"]
    assert code_spans(with_docker) == ["LOCALSTACK_AUTH_TOKEN"] and without_docker == "none"


def test_the_lab_installs_nothing_at_start_and_mounts_no_answers(compose: dict) -> None:
    """The image's own command runs, and the learner's home is a named volume, never this checkout."""
    lab = compose["services"]["lab"]
    assert "command" not in lab and "entrypoint" not in lab
    for volume in lab["volumes"]:
        source = volume.split(":", 1)[0]
        assert source in (compose.get("volumes") or {}), f"{volume}: mount a named volume, not a host folder"


def test_the_lab_points_the_library_at_the_services(compose: dict) -> None:
    env = environment_of(compose["services"]["lab"])
    assert env["FLEETLAB_BACKEND"] == "localstack"
    assert env["LOCALSTACK_ENDPOINT"] == "http://localstack:4566"


def test_the_library_reads_the_variables_compose_sets(compose: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's variables, by the names compose sets, steer fleetlab.open_backend.

    The LocalStack endpoint is swapped for a closed loopback port, so the backend must
    fail to reach exactly that address: proof that the names are the ones it reads.
    """
    from fleetlab.backends.backend import open_backend
    from fleetlab.core.errors import BackendUnavailable

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for key, value in environment_of(compose["services"]["lab"]).items():
        monkeypatch.setenv(key, closed if key == "LOCALSTACK_ENDPOINT" else value)
    with pytest.raises(BackendUnavailable, match=re.escape(closed)):
        open_backend()


def test_the_lab_waits_for_healthy_services(compose: dict) -> None:
    services = compose["services"]
    assert services["lab"]["depends_on"] == {"localstack": {"condition": "service_healthy"},
                                             "moto": {"condition": "service_healthy"}}
    assert "_localstack/health" in str(services["localstack"]["healthcheck"]["test"])
    assert f"localhost:{host.MOTO_PORT}/moto-api/" in str(services["moto"]["healthcheck"]["test"])


# --- .devcontainer/devcontainer.json ---------------------------------------------------


def read_jsonc(path: Path) -> dict:
    """A JSON file that may carry whole-line // comments, as devcontainer.json may."""
    return json.loads("\n".join(line for line in path.read_text().splitlines()
                                if not line.lstrip().startswith("//")))


@pytest.fixture(scope="module")
def devcontainer() -> dict:
    return read_jsonc(DEVCONTAINER)


@pytest.fixture(scope="module")
def devcontainer_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(DEVCONTAINER_SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def test_devcontainer_matches_the_schema(devcontainer: dict, devcontainer_validator) -> None:
    errors = [f"{'/'.join(map(str, error.path))}: {error.message}"
              for error in devcontainer_validator.iter_errors(devcontainer)]
    assert not errors, errors


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda config: config.pop("image"), "no image, Dockerfile or compose file"),
        (lambda config: config.update(build={"dockerfile": "../Dockerfile"}), "an image and a build at once"),
        (lambda config: config.update(forwardPort=[8888]), "a misspelt property"),
        (lambda config: config.update(forwardPorts=["8888"]), "a port as a bare string"),
        (lambda config: config.update(postCreateCommand=7), "a command that is a number"),
        (lambda config: config["portsAttributes"]["8888"].update(onAutoForward="open"), "an unknown forward action"),
    ],
)
def test_the_schema_refuses_what_the_spec_refuses(devcontainer: dict, devcontainer_validator, change, why) -> None:
    """The schema is no rubber stamp: each of these breaks the fleetlab dev container."""
    broken = json.loads(json.dumps(devcontainer))
    change(broken)
    assert not devcontainer_validator.is_valid(broken), why


def test_devcontainer_forwards_the_lab_port(devcontainer: dict) -> None:
    port = makefile_default("LAB_PORT")
    assert devcontainer["forwardPorts"] == [int(port)]
    assert port in devcontainer["portsAttributes"]


def test_devcontainer_uses_the_courses_two_commands(devcontainer: dict) -> None:
    """`make venv` once, `make lab` on attach, on environment.yml's Python, with JupyterLab kept on loopback."""
    assert devcontainer["postCreateCommand"] == "make venv"
    assert devcontainer["postAttachCommand"] == "make lab"
    assert re.fullmatch(rf"mcr\.microsoft\.com/devcontainers/python:\d+-{re.escape(conda_python())}-[a-z]+",
                        devcontainer["image"]), devcontainer["image"]
    assert devcontainer["containerEnv"]["FLEETLAB_BACKEND"] == "moto"
    assert "--ip" not in devcontainer["containerEnv"]["LAB_FLAGS"]


# --- the workflows ---------------------------------------------------------------------


def workflow_files() -> list[Path]:
    """Every workflow: the repository's own and the one the learner's release carries."""
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [path.name for path in files] == ["localstack.yml", "test.yml"]
    return [*files, GRADE_WORKFLOW]


def load_workflow(path: Path) -> dict:
    """A workflow, parsed; YAML 1.1 reads the key `on` as True, so it is put back under "on"."""
    workflow = yaml.safe_load(path.read_text())
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


def run_lines(workflow: dict) -> list[str]:
    """Every line of every step's shell script, stripped."""
    return [line.strip() for job in workflow["jobs"].values() for step in job["steps"]
            for line in step.get("run", "").splitlines()]


def test_actionlint_passes_every_workflow(tmp_path: Path) -> None:
    """actionlint (shellcheck and pyflakes off, so the result does not depend on what else is installed)."""
    done = run_tool([tool("actionlint"), "-no-color", "-shellcheck=", "-pyflakes=",
                     *map(str, workflow_files())], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_refuses_a_broken_workflow(tmp_path: Path) -> None:
    """The linter really runs: a job without a runner and an unknown expression context are reported."""
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  test:\n    steps:\n      - run: echo ${{ secret.TOKEN }}\n")
    done = run_tool([tool("actionlint"), "-no-color", "-shellcheck=", "-pyflakes=", str(broken)], cwd=tmp_path)
    assert done.returncode != 0
    assert "runs-on" in done.stdout and "secret" in done.stdout, done.stdout


def test_the_test_workflow_runs_make_test_with_debians_chromium() -> None:
    """On every push and pull request, as CI: Chromium and npm from apt, `make test` with CI set, then `make test-hub`."""
    workflow = load_workflow(WORKFLOWS / "test.yml")
    assert {"push", "pull_request"} <= set(workflow["on"])
    (job,) = workflow["jobs"].values()
    assert job["env"]["CI"] == "true"
    lines = run_lines(workflow)
    assert "make test" in lines
    install = " ".join(lines[:lines.index("make test")])
    assert re.search(r"apt-get install .*\bchromium\b", install), "install Chromium with apt before make test"
    # the room on a real JupyterHub, which make test leaves out: its proxy comes from the npm registry
    assert lines.index("make test-hub") > lines.index("make test")
    assert re.search(r"apt-get install .*\bnpm\b", install), "install npm with apt before make test-hub"


def test_the_localstack_workflow_runs_on_a_schedule() -> None:
    """A weekly cron (and by hand) runs `make test-localstack` with the Python LocalStack needs."""
    workflow = load_workflow(WORKFLOWS / "localstack.yml")
    (schedule,) = workflow["on"]["schedule"]
    assert len(schedule["cron"].split()) == 5
    assert "workflow_dispatch" in workflow["on"]
    assert any(line.startswith("make test-localstack") for line in run_lines(workflow))
    (job,) = workflow["jobs"].values()
    setup = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python@"))
    minimum = ".".join(map(str, host.MINIMUM_PYTHON))
    assert minimum in setup["with"]["python-version"].split()


def test_the_release_workflow_passes_or_fails_each_check_on_its_public_cases_and_says_it_is_no_grade() -> None:
    """One autograding test per check a student notebook calls, worth 1 point, read from this run's progress file,
    after a step that runs every notebook; the file says it is the learner's feedback, not the grade."""
    text = GRADE_WORKFLOW.read_text()
    assert "not your grade" in text and "pass or a fail per check" in text and "one point per check" not in text
    workflow = load_workflow(GRADE_WORKFLOW)
    assert "push" in workflow["on"]
    (job,) = workflow["jobs"].values()
    assert "FLEETLAB_EXPECT_CHECKS" not in job["env"] and job["env"]["FLEETLAB_HOME"].startswith("/tmp/")
    runs = [step for step in job["steps"] if "--nbval-lax labs/" in step.get("run", "")]
    assert len(runs) == 1 and runs[0]["continue-on-error"] is True
    graders = [step for step in job["steps"]
               if step.get("uses", "").startswith("classroom-resources/autograding-command-grader@")]
    assert job["steps"].index(runs[0]) < job["steps"].index(graders[0])
    expected = {check_id: 1 for notebook in student_notebooks() for check_id in check_ids(notebook)}
    graded = {step["with"]["command"].split()[-1]: step["with"]["max-score"] for step in graders}
    assert graded == expected
    assert all(step["with"]["command"].startswith(".venv/bin/python .github/public_pass.py ") for step in graders)
    (reporter,) = [step for step in job["steps"]
                   if step.get("uses", "").startswith("classroom-resources/autograding-grading-reporter@")]
    ids = [step["id"] for step in graders]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {f"{id_.upper()}_RESULTS": f"${{{{ steps.{id_}.outputs.result }}}}" for id_ in ids}


def test_the_release_workflow_reads_each_checks_public_result_from_the_progress_file(tmp_path) -> None:
    """public_pass.py exits 0 for a "public pass" only; a check never run fails, saying so."""
    script = RELEASE_TEMPLATE / ".github" / "public_pass.py"
    (tmp_path / "progress.json").write_text(json.dumps({"version": 1, "checks": {
        "03.budget": {"status": "public pass"}, "03.triage": {"status": "fail"}}}))
    env = {**os.environ, "FLEETLAB_HOME": str(tmp_path)}
    said = {check_id: subprocess.run([sys.executable, str(script), check_id], env=env, capture_output=True, text=True)
            for check_id in ("03.budget", "03.triage", "03.redrive")}
    assert {check_id: run.returncode for check_id, run in said.items()} == {"03.budget": 0, "03.triage": 1,
                                                                              "03.redrive": 1}
    assert said["03.redrive"].stdout.startswith("03.redrive: not run")


def test_the_release_workflow_ships_with_the_instructor_package() -> None:
    """The instructor distribution's package data includes the template, so `fleetlab release` finds it installed."""
    pyproject = tomllib.loads((REPO / "instructor" / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["fleetlab_instructor"]
    package = RELEASE_TEMPLATE.parent
    shipped = {path for pattern in patterns for path in package.glob(pattern)}
    assert GRADE_WORKFLOW in shipped

"""Fixtures for the real-browser tests: a private JupyterLab server and system Chromium.

The server runs from this interpreter's environment (the project's venv) with every
per-user Jupyter directory pointed at a temporary folder, so the test writes nothing
into the venv or the home directory and no personal setting changes what it sees:

- ``--LabApp.app_settings_dir`` holds ``overrides.json``, a copy of
  ``tests/e2e/jupyter_overrides.json`` (news toast and update check off, autosave off,
  every cell attached to the DOM);
- ``--LabApp.user_settings_dir`` and ``--LabApp.workspaces_dir`` start empty (user
  settings would beat the overrides; a saved workspace would reopen old tabs);
- ``JUPYTER_CONFIG_DIR``, ``JUPYTER_DATA_DIR``, ``JUPYTER_RUNTIME_DIR``,
  ``IPYTHONDIR`` and ``FLEETLAB_HOME`` (progress, fidelity cache) are temporary too;
- ``JUPYTER_PATH`` starts with a temporary folder (searched before the venv's kernelspecs); under
  ``make test`` (a warm template running) its ``python3`` kernelspec is the warm one, so each
  notebook's kernel is forked from the template, not imported anew.

The server's root is a temporary folder holding a copy of ``tests/e2e/fixtures/`` and a
symlink ``labs`` to the repository's ``labs/``: the fixture is never edited in place
and lab notebooks run from their real folder, as under ``make lab``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fleetlab_tools.kernel_launcher import WARM_VARIABLE
from fleetlab_tools.warm_kernels import write_kernelspec

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parents[1]
LABS_DIR = REPO_ROOT / "labs"
FIXTURES_DIR = E2E_DIR / "fixtures"
OVERRIDES_FILE = E2E_DIR / "jupyter_overrides.json"
ARTIFACTS_DIR = REPO_ROOT / "artifacts" / "e2e"

SERVER_START_TIMEOUT_S = 120.0
SERVER_STOP_TIMEOUT_S = 30.0
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Requests to the local server never go through an http_proxy from the environment.
LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))
CHROMIUM_MISSING = (
    "Chromium not installed: run `make browser` (installs Debian's chromium) or apt-get install chromium"
)


def find_chromium() -> str | None:
    """Return the path of the system Chromium, or None when it is not installed."""
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


def browser_required() -> bool:
    """True in CI (``CI`` set and not false): there a missing Chromium fails the browser tests."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests that need the browser or the server, with the reason, when Chromium is missing.

    In CI they are not skipped: the ``browser`` fixture fails them instead, so a
    CI machine without Chromium cannot pass by running no browser test.
    The tests that read one notebook's run go next to each other, so its page
    and kernel are shut down before the next notebook opens (``NotebookRuns``).
    """
    _each_notebook_read_together(items)
    if find_chromium() is not None or browser_required():
        return
    skip = pytest.mark.skip(reason=CHROMIUM_MISSING)
    for item in items:
        needs_browser = {"browser", "lab_server"} & set(getattr(item, "fixturenames", ()))
        if E2E_DIR in Path(item.path).parents and needs_browser:
            item.add_marker(skip)


def _each_notebook_read_together(items: list[pytest.Item]) -> None:
    """Reorder, in their own places, the tests that take the ``ran`` fixture: by notebook, then as collected."""
    places = [index for index, item in enumerate(items) if "ran" in _params(item)]
    by_notebook = sorted((items[index] for index in places), key=lambda item: _params(item)["ran"])
    for index, item in zip(places, by_notebook):
        items[index] = item


def _params(item: pytest.Item) -> dict:
    callspec = getattr(item, "callspec", None)
    return callspec.params if callspec is not None else {}


@dataclass
class LabServer:
    """A running JupyterLab: where it listens, its token and its process."""

    base_url: str
    token: str
    root: Path
    process: subprocess.Popen
    log_path: Path

    def url(self, path: str) -> str:
        """Browser URL of ``path`` (e.g. ``lab/tree/x.ipynb?reset``) with the token."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path}{sep}token={self.token}"

    def api(self, method: str, path: str) -> object:
        """Call the server's REST API (``/api/...``); return the decoded JSON (or None)."""
        return self._call(method, f"api/{path}")

    def lab_api(self, method: str, path: str) -> object:
        """Call JupyterLab's REST API (``/lab/api/...``); return the decoded JSON (or None)."""
        return self._call(method, f"lab/api/{path}")

    def _call(self, method: str, path: str) -> object:
        """An authenticated request to ``base_url/path``."""
        request = urllib.request.Request(
            f"{self.base_url}/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with LOOPBACK.open(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def delete_session(self, notebook: str) -> None:
        """Shut down the kernel session of ``notebook`` (its path under the server root)."""
        for session in self.api("GET", "sessions"):
            if session["path"] == notebook:
                self.api("DELETE", f"sessions/{session['id']}")

    def delete_sessions(self) -> None:
        """Shut down every kernel session (kernels outlive the browser page)."""
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")
        for kernel in self.api("GET", "kernels"):
            self.api("DELETE", f"kernels/{kernel['id']}")


def _make_root(tmp: Path) -> Path:
    """Server root: a copy of the fixtures and a symlink to the repository's labs/."""
    root = tmp / "root"
    shutil.copytree(FIXTURES_DIR, root / "fixtures")
    (root / "labs").symlink_to(LABS_DIR, target_is_directory=True)
    return root


def _make_jupyter_dirs(tmp: Path) -> dict[str, Path]:
    """Temporary Jupyter directories; app settings carry the test's overrides.json."""
    dirs = {
        name: tmp / name
        for name in ("app_settings", "user_settings", "workspaces", "config", "data", "runtime", "ipython", "fleetlab",
                     "path")
    }
    for path in dirs.values():
        path.mkdir()
    shutil.copyfile(OVERRIDES_FILE, dirs["app_settings"] / "overrides.json")
    if WARM_VARIABLE in os.environ:  # make test runs under a warm template: the notebooks' kernels fork from it
        write_kernelspec(dirs["path"] / "kernels" / "python3")
    return dirs


def _server_command(root: Path, dirs: dict[str, Path], token: str) -> list[str]:
    """The ``python -m jupyterlab`` command line, loopback only, on a port the OS picks."""
    command = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        f"--LabApp.app_settings_dir={dirs['app_settings']}",
        f"--LabApp.user_settings_dir={dirs['user_settings']}",
        f"--LabApp.workspaces_dir={dirs['workspaces']}",
    ]
    if os.getuid() == 0:
        command.append("--allow-root")
    return command


def _server_env(dirs: dict[str, Path]) -> dict[str, str]:
    """The server's (and so the kernels') environment: moto backend, private Jupyter and fleetlab dirs.

    Every check in a student notebook must say "not yet" (``FLEETLAB_EXPECT_CHECKS``): anything else
    raises in the notebook, and the traceback fails the test, so the browser run is also the student
    notebooks' run top to bottom.
    """
    env = {key: value for key, value in os.environ.items() if key != "FLEETLAB_ALLOW_REAL_AWS"}
    env.update(
        FLEETLAB_BACKEND="moto",
        FLEETLAB_EXPECT_CHECKS="not-yet",
        FLEETLAB_HOME=str(dirs["fleetlab"]),
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PATH=os.pathsep.join(filter(None, [str(dirs["path"]), os.environ.get("JUPYTER_PATH")])),
    )
    return env


def _wait_for_server(process: subprocess.Popen, runtime_dir: Path, token: str, log_path: Path) -> str:
    """Poll the server's info file, then ``/api/status``; return the base URL (bounded)."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    base_url = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"JupyterLab exited with {process.returncode}:\n{log_path.read_text(errors='replace')}"
            )
        if base_url is None:
            base_url = _read_base_url(runtime_dir)
        if base_url is not None and _status_ok(base_url, token):
            return base_url
        time.sleep(0.25)  # poll interval, not synchronisation: the loop checks readiness
    raise TimeoutError(
        f"JupyterLab not ready after {SERVER_START_TIMEOUT_S:.0f} s:\n{log_path.read_text(errors='replace')}"
    )


def _read_base_url(runtime_dir: Path) -> str | None:
    """The server's URL from its ``jpserver-<pid>.json`` info file, once written."""
    for info_file in runtime_dir.glob("jpserver-*.json"):
        try:
            info = json.loads(info_file.read_text())
        except (OSError, json.JSONDecodeError):
            return None  # being written
        return f"http://127.0.0.1:{info['port']}"
    return None


def _status_ok(base_url: str, token: str) -> bool:
    """True when ``/api/status`` answers 200."""
    request = urllib.request.Request(
        f"{base_url}/api/status", headers={"Authorization": f"token {token}"}
    )
    try:
        with LOOPBACK.open(request, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _stop_server(server: LabServer) -> None:
    """Delete kernel sessions through the API, then terminate the server by its PID."""
    try:
        server.delete_sessions()
    finally:
        server.process.terminate()
        try:
            server.process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=SERVER_STOP_TIMEOUT_S)


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab on 127.0.0.1 with a random token, stopped at the end of the session."""
    tmp = tmp_path_factory.mktemp("jupyterlab")
    root = _make_root(tmp)
    dirs = _make_jupyter_dirs(tmp)
    token = secrets.token_hex(24)
    log_path = tmp / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            _server_command(root, dirs, token),
            cwd=root,
            env=_server_env(dirs),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        base_url = _wait_for_server(process, dirs["runtime"], token, log_path)
    except BaseException:
        process.kill()
        process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        raise
    server = LabServer(base_url=base_url, token=token, root=root, process=process, log_path=log_path)
    yield server
    _stop_server(server)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Headless system Chromium driven by Playwright's sync API."""
    from playwright.sync_api import sync_playwright

    executable = find_chromium()
    if executable is None:
        pytest.fail(f"CI is set and {CHROMIUM_MISSING}", pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """``artifacts/e2e/`` (git-ignored), where screenshots go."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS_DIR

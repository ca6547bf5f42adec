"""The no-Docker LocalStack route: finding Python, refusing taken ports, stopping only its own processes.

LocalStack itself is not installed here (500 MB; ``make test-localstack``
runs it for real). These tests start real child processes and real
listening sockets in a throwaway home; nothing touches the repo's
``.localstack/`` or ports 4566/4567.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from fleetlab_tools.localstack import host

from fleetlab.backends.backend import open_backend
from fleetlab.cli import main
from fleetlab.core.clock import wait_until
from fleetlab.core.errors import BackendUnavailable, InvalidInput
from fleetlab.core.settings import SERVED_APART


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def home(tmp_path: Path) -> host.Home:
    return host.Home(tmp_path / ".localstack")


def sleeper(name: str = "sleeper", *, prints: str = "", exit_code: int | None = None) -> host.Service:
    """A real child process standing in for a service that never answers its health URL."""
    body = f"print({prints!r}, flush=True)\n" + (
        f"raise SystemExit({exit_code})" if exit_code is not None else "import time; time.sleep(120)"
    )
    return host.Service(
        name=name,
        port=free_port(),
        command=(sys.executable, "-c", body),
        environment=dict(os.environ),
        health_path="/health",
        ready=lambda body: True,
    )


@pytest.fixture
def started(home: host.Home) -> Iterator[list[host.Started]]:
    """Processes a test starts; any still running at the end are stopped."""
    processes: list[host.Started] = []
    yield processes
    for process in processes:
        host.stop(process, grace=5)


# --------------------------------------------------------------------------- finding Python 3.13


def test_a_python_variable_that_is_no_python_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="FLEETLAB_LOCALSTACK_PYTHON") as raised:
        host.find_python({"FLEETLAB_LOCALSTACK_PYTHON": str(tmp_path / "python3.13"), "PATH": ""})
    assert raised.value.field == "FLEETLAB_LOCALSTACK_PYTHON"
    assert "3.13" in str(raised.value)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="this Python is itself recent enough")
def test_no_python_anywhere_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable) as raised:
        host.find_python({"PATH": str(tmp_path), "HOME": str(tmp_path)})
    message = str(raised.value)
    assert "Python 3.13 or newer" in message
    assert "pyenv install 3.13" in message and "FLEETLAB_LOCALSTACK_PYTHON=" in message
    assert sys.executable in message  # it says where it looked


def fake_python(path: Path, *, recent: bool) -> Path:
    """An executable that answers the version check as a Python 3.13 would (or would not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexit {0 if recent else 1}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="this Python is itself recent enough")
def test_pyenv_versions_are_searched_newest_first(tmp_path: Path) -> None:
    versions = tmp_path / "pyenv" / "versions"
    fake_python(versions / "3.12.1" / "bin" / "python3", recent=False)
    older = fake_python(versions / "3.13.0" / "bin" / "python3", recent=True)
    newer = fake_python(versions / "3.13.10" / "bin" / "python3", recent=True)
    environ = {"PATH": str(tmp_path / "empty"), "PYENV_ROOT": str(tmp_path / "pyenv")}
    assert host.find_python(environ) == str(newer)
    newer.unlink()
    assert host.find_python(environ) == str(older)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="this Python is itself recent enough")
def test_python313_on_path_wins_over_pyenv(tmp_path: Path) -> None:
    on_path = fake_python(tmp_path / "bin" / "python3.13", recent=True)
    fake_python(tmp_path / "pyenv" / "versions" / "3.14.0" / "bin" / "python3", recent=True)
    environ = {"PATH": str(tmp_path / "bin"), "PYENV_ROOT": str(tmp_path / "pyenv")}
    assert host.find_python(environ) == str(on_path)


# --------------------------------------------------------------------------- installing


def test_the_start_replay_patch_parses_archived_times_and_is_idempotent(tmp_path: Path) -> None:
    events = tmp_path / "localstack" / "services" / "events"
    events.mkdir(parents=True)
    (events / "archive.py").write_text(
        "from datetime import UTC, datetime\n\n"
        "def _normalize_datetime(dt):\n"
        "    return dt.replace(second=0, microsecond=0)\n"
    )
    (events / "utils.py").write_text(
        "from datetime import UTC, datetime\n\n"
        "def re_format_event(event):\n"
        '    return {\n        "Time": event["time"],\n    }\n'
    )
    host.patch_start_replay(tmp_path)
    patched = {name: (events / name).read_text() for name in ("archive.py", "utils.py")}
    host.patch_start_replay(tmp_path)
    assert {name: (events / name).read_text() for name in patched} == patched

    archive: dict = {}
    exec(compile(patched["archive.py"], "archive.py", "exec"), archive)
    normalized = archive["_normalize_datetime"]("2026-03-04T05:06:07Z")
    assert (normalized.isoformat(), normalized.second) == ("2026-03-04T05:06:00+00:00", 0)
    utils: dict = {}
    exec(compile(patched["utils.py"], "utils.py", "exec"), utils)
    assert utils["re_format_event"]({"time": "2026-03-04T05:06:07Z"})["Time"].minute == 6


def test_the_patch_refuses_code_it_does_not_recognise(tmp_path: Path) -> None:
    events = tmp_path / "localstack" / "services" / "events"
    events.mkdir(parents=True)
    (events / "archive.py").write_text("def _normalize_datetime(dt):\n    return dt\n")
    with pytest.raises(BackendUnavailable, match="archive.py does not hold the expected line"):
        host.patch_start_replay(tmp_path)


def test_only_a_finished_install_of_these_pins_counts(home: host.Home) -> None:
    assert not host.installed(home)
    home.venv.mkdir(parents=True)
    home.stamp.write_text(json.dumps({"packages": ["localstack-core==0.0.1"], "patch": host.REPLAY_PATCH_ID}))
    assert not host.installed(home)
    home.stamp.write_text(json.dumps({"packages": list(host.PACKAGES), "patch": host.REPLAY_PATCH_ID}))
    assert host.installed(home)


# --------------------------------------------------------------------------- starting and stopping


def test_up_refuses_a_taken_port_before_installing_anything(home: host.Home) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        with pytest.raises(BackendUnavailable, match=f"127.0.0.1:{taken} \\(for localstack\\) already in use"):
            host.up(home, ports=host.Ports(localstack=taken, moto=free_port()), report=lambda line: None)
    assert not home.venv.exists()
    assert host.read_record(home) == []


def test_stop_ends_the_process_it_started(home: host.Home, started: list[host.Started]) -> None:
    process = host.start_process(sleeper(), home)
    started.append(process)
    assert host.is_running(process)
    assert host.stop(process, grace=5) == f"stopped sleeper (pid {process.pid})"
    assert not host.is_running(process)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_ends_the_processes_the_started_one_started_too(home: host.Home, started: list[host.Started]) -> None:
    spawner = sleeper(prints="")
    body = ("import subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            "print(child.pid, flush=True)\ntime.sleep(120)")
    process = host.start_process(replace(spawner, command=(sys.executable, "-c", body)), home)
    started.append(process)
    log = Path(process.log)
    grandchild = int(wait_until(lambda: log.read_text().strip(), timeout=30, what="the child's pid in the log"))
    assert psutil.Process(grandchild).ppid() == process.pid
    assert host.stop(process, grace=5) == f"stopped sleeper (pid {process.pid})"
    assert gone(process.pid) and gone(grandchild)


def test_down_stops_only_recorded_processes_that_are_still_the_same(
    home: host.Home, started: list[host.Started]
) -> None:
    ours = host.start_process(sleeper("ours"), home)
    started.append(ours)
    impostor = host.Started("impostor", os.getpid(), 0.0, 1, str(home.log("impostor")))  # this PID, not that process
    home.run.mkdir(parents=True, exist_ok=True)
    home.record.write_text(json.dumps([vars(ours), vars(impostor)]))

    lines = host.down(home, report=lambda line: None)

    assert lines == [f"impostor (pid {os.getpid()}) was not running", f"stopped ours (pid {ours.pid})"]
    assert not host.is_running(ours)
    assert not home.record.exists()
    assert host.down(home, report=lambda line: None) == []


def test_a_service_that_exits_asking_for_a_token_is_named(home: host.Home, started: list[host.Started]) -> None:
    service = sleeper("localstack", prints="LOCALSTACK_AUTH_TOKEN is required to start", exit_code=55)
    process = host.start_process(service, home)
    started.append(process)
    with pytest.raises(BackendUnavailable) as raised:
        host.wait_healthy(service, process, time.monotonic() + 30)
    message = str(raised.value)
    assert "exited while starting because it asks for an auth token" in message
    assert "LOCALSTACK_AUTH_TOKEN is required to start" in message  # the log's tail


def test_a_service_not_healthy_in_time_shows_its_log(home: host.Home, started: list[host.Started]) -> None:
    service = sleeper("moto", prints="starting, slowly")
    process = host.start_process(service, home)
    started.append(process)
    began = time.monotonic()
    with pytest.raises(BackendUnavailable, match=r"was not healthy at .*/health in time(.|\n)*starting, slowly"):
        host.wait_healthy(service, process, began + 1.5)
    assert time.monotonic() - began < 10
    assert host.is_running(process)  # wait_healthy only reports; up() stops what it started


# --------------------------------------------------------------------------- the environment it prints


def test_the_exports_are_what_the_localstack_backend_reads() -> None:
    exported = host.exports(host.Ports(localstack=4566, moto=4567))
    assert exported["FLEETLAB_BACKEND"] == "localstack"
    assert exported["LOCALSTACK_ENDPOINT"] == "http://127.0.0.1:4566"
    assert {exported[variable] for variable in SERVED_APART.values()} == {"http://127.0.0.1:4567"}


def test_an_unreachable_localstack_points_at_make_localstack_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALSTACK_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(BackendUnavailable, match="make localstack-up"):
        open_backend("localstack")


def test_cli_down_and_status_with_nothing_started(
    home: host.Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(host, "default_home", lambda: home)
    assert main(["localstack", "down"]) == 0
    assert "nothing to stop" in capsys.readouterr().err
    assert main(["localstack", "status"]) == 1
    out = capsys.readouterr().out
    assert "not installed" in out and "localstack: http://127.0.0.1:4566: not started" in out


def test_a_checkout_keeps_its_cache_at_its_root() -> None:
    root = Path(__file__).resolve().parents[1]
    assert host.default_home().root == root / ".localstack"
    ignored = subprocess.run(["git", "check-ignore", "-q", ".localstack/venv"], cwd=root)
    assert ignored.returncode == 0, ".localstack/ must stay out of git"

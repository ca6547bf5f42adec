"""A real LocalStack on this machine, without Docker: install once, start, stop, status.

LocalStack's community runtime (``localstack-core``) is a Python program; it
needs Python >= 3.13, so it gets its own virtual environment inside the
repo's ignored ``.localstack/`` folder (``home``), installed once with the
versions of its dependencies it was released with, and patched for an
upstream StartReplay bug. ``up`` then starts two processes:

* LocalStack on 127.0.0.1:4566, serving SQS, EventBridge, Step Functions and STS;
* a moto server on 127.0.0.1:4567, serving DynamoDB and S3 (LocalStack's own
  DynamoDB downloads Java and DynamoDB Local on first use, which an offline
  machine cannot do).

Each started process is recorded in ``home/run/processes.json`` with its PID
and its creation time (psutil's), and its output goes to ``home/run/<name>.log``.
``down`` stops a recorded process only while that PID still belongs to the
process that was started (same creation time), with the processes it started,
and nothing else.
``up`` and ``down`` are idempotent. ``exports`` is the environment that points
the ``localstack`` backend at the two endpoints.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from fleetlab.core.errors import BackendUnavailable, InvalidInput
from fleetlab.core.settings import SERVED_APART, Settings

RELEASE = "2026.3.0"
PACKAGES = (
    f"localstack-core[runtime]=={RELEASE}",
    # What 2026.3.0 was released against; today's newer releases of these break it.
    "cbor2==5.8.0",
    "pyopenssl==25.3.0",
    "cryptography==46.0.5",
    "localstack-twisted==25.5.0",
    "moto-ext==5.1.25",
    "flask==3.1.3",
    "flask-cors==6.0.5",
)
MINIMUM_PYTHON = (3, 13)
PYTHON_VARIABLE = Settings.variable_of("localstack_python")
HOST = "127.0.0.1"
LOCALSTACK_PORT = 4566
MOTO_PORT = 4567
LOCALSTACK_SERVICES = ("sqs", "events", "stepfunctions", "sts")
MOTO_SERVICES = ("dynamodb", "s3")
STOP_GRACE_SECONDS = 20.0

Report = Callable[[str], None]


# --------------------------------------------------------------------------- where things live


@dataclass(frozen=True)
class Home:
    """The cache folder: LocalStack's environment, the install log, the running processes."""

    root: Path

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def stamp(self) -> Path:
        """Written last by a finished install: what was installed, so a change reinstalls."""
        return self.venv / ".fleetlab-install.json"

    @property
    def install_log(self) -> Path:
        return self.root / "install.log"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def record(self) -> Path:
        return self.run / "processes.json"

    def log(self, name: str) -> Path:
        return self.run / f"{name}.log"


def checkout() -> Path | None:
    """The root of the fleetlab checkout these tools run from, or ``None`` when they were installed apart."""
    root = Path(__file__).resolve().parents[4]
    if (root / "pyproject.toml").is_file() and (root / "src" / "fleetlab").is_dir():
        return root
    return None


def default_home() -> Home:
    """``.localstack/`` at the root of the checkout fleetlab runs from, else in the current folder."""
    return Home((checkout() or Path.cwd()) / ".localstack")


# --------------------------------------------------------------------------- the two services


@dataclass(frozen=True)
class Ports:
    """Where the two services listen, on 127.0.0.1."""

    localstack: int = LOCALSTACK_PORT
    moto: int = MOTO_PORT

    @property
    def localstack_url(self) -> str:
        return f"http://{HOST}:{self.localstack}"

    @property
    def moto_url(self) -> str:
        return f"http://{HOST}:{self.moto}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe_socket:
        probe_socket.bind((HOST, 0))
        return probe_socket.getsockname()[1]


def available_ports() -> Ports:
    """4566 and 4567 when both are free, else two free ports (another checkout's LocalStack may hold them)."""
    default = Ports()
    if not port_in_use(default.localstack) and not port_in_use(default.moto):
        return default
    return Ports(localstack=free_port(), moto=free_port())


def exports(ports: Ports = Ports()) -> dict[str, str]:
    """The environment that points the ``localstack`` backend at these services."""
    apart = {SERVED_APART[service]: ports.moto_url for service in MOTO_SERVICES}
    return {"FLEETLAB_BACKEND": "localstack", "LOCALSTACK_ENDPOINT": ports.localstack_url, **apart}


@dataclass(frozen=True)
class Service:
    """A process ``up`` starts: its command, environment and how to tell it is ready."""

    name: str
    port: int
    command: tuple[str, ...]
    environment: dict[str, str]
    health_path: str
    ready: Callable[[bytes], bool]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def health_url(self) -> str:
        return self.url + self.health_path


def services(home: Home, ports: Ports) -> tuple[Service, ...]:
    """LocalStack and the moto server beside it."""
    base = _child_environment(os.environ)
    localstack = Service(
        name="localstack",
        port=ports.localstack,
        command=(str(home.python), "-m", "localstack.runtime.main"),
        environment={**base, **_localstack_settings(home, ports)},
        health_path="/_localstack/health",
        ready=_services_available,
    )
    moto = Service(
        name="moto",
        port=ports.moto,
        command=(sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(ports.moto)),
        environment=base,
        health_path="/moto-api/",
        ready=lambda body: True,
    )
    return localstack, moto


def _localstack_settings(home: Home, ports: Ports) -> dict[str, str]:
    """LocalStack's settings for running as a plain process on this host."""
    return {
        "GATEWAY_LISTEN": f"{HOST}:{ports.localstack}",  # loopback only, and no HTTPS port 443
        "SERVICES": ",".join(LOCALSTACK_SERVICES),
        "OVERRIDE_IN_DOCKER": "0",  # it is not in its container: no container paths or DNS
        "FILESYSTEM_ROOT": str(home.run / "fs"),  # its state and temp files stay in the cache folder,
        "XDG_CACHE_HOME": str(home.run / "cache"),  # and so does its plugin cache
        "DNS_ADDRESS": "0",  # no DNS server (it would bind port 53)
        "SKIP_SSL_CERT_DOWNLOAD": "1",  # the machine may be offline; plain HTTP needs no certificate
        "DISABLE_EVENTS": "1",  # no usage analytics sent out
    }


def _child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without what would make another Python load the wrong packages."""
    return {k: v for k, v in environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def _services_available(body: bytes) -> bool:
    """LocalStack's health report lists every requested service as available (or running)."""
    try:
        states = json.loads(body).get("services", {})
    except ValueError:
        return False
    return all(states.get(name) in ("available", "running") for name in LOCALSTACK_SERVICES)


# --------------------------------------------------------------------------- finding Python 3.13


def find_python(environ: Mapping[str, str] = os.environ) -> str:
    """A Python >= 3.13 to install LocalStack with.

    ``$FLEETLAB_LOCALSTACK_PYTHON`` when set (InvalidInput if it is not such a
    Python), else the first of this Python, ``python3.13``/``python3.14``/
    ``python3`` on PATH and pyenv's installed versions. BackendUnavailable,
    with how to get one, when there is none.
    """
    chosen = Settings.from_env(environ).localstack_python
    if chosen:
        if not _is_recent_python(chosen):
            raise InvalidInput(
                PYTHON_VARIABLE,
                f"{chosen!r} is not a Python {_version_text(MINIMUM_PYTHON)} or newer that runs",
                hint="point it at a python3.13 executable, or unset it to let fleetlab search",
            )
        return chosen
    looked_at = list(dict.fromkeys(_candidates(environ)))
    for candidate in looked_at:
        if _is_recent_python(candidate):
            return candidate
    raise BackendUnavailable(
        f"LocalStack {RELEASE} needs Python {_version_text(MINIMUM_PYTHON)} or newer and none was found "
        f"(tried: {', '.join(looked_at) or 'nothing'}). Install one (`pyenv install 3.13`, your system's "
        f"python3.13 package, or python.org), then run again, or set {PYTHON_VARIABLE}=/path/to/python3.13"
    )


def _candidates(environ: Mapping[str, str]) -> Iterable[str]:
    yield sys.executable
    path = environ.get("PATH", "")
    for name in ("python3.13", "python3.14", "python3"):
        found = shutil.which(name, path=path)
        if found:
            yield found
    pyenv_root = Path(environ.get("PYENV_ROOT") or Path(environ.get("HOME", "~")).expanduser() / ".pyenv")
    versions = sorted((pyenv_root / "versions").glob("3.*/bin/python3"), key=_version_key, reverse=True)
    yield from (str(python) for python in versions)


def _version_key(python: Path) -> tuple[int, ...]:
    parts = python.parents[1].name.split(".")
    return tuple(int(part) if part.isdigit() else -1 for part in parts)


def _is_recent_python(executable: str) -> bool:
    check = f"import sys; sys.exit(0 if sys.version_info >= {MINIMUM_PYTHON!r} else 1)"
    try:
        return subprocess.run([executable, "-c", check], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _version_text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


# --------------------------------------------------------------------------- installing


def installed(home: Home) -> bool:
    """True when ``home`` holds a finished install of exactly these packages and this patch."""
    try:
        stamp = json.loads(home.stamp.read_text())
    except (OSError, ValueError):
        return False
    return stamp.get("packages") == list(PACKAGES) and stamp.get("patch") == REPLAY_PATCH_ID


def install(home: Home, report: Report) -> float:
    """Install LocalStack into ``home`` (replacing any earlier attempt); the seconds it took.

    Raises BackendUnavailable with the end of pip's log when pip fails, and
    when the StartReplay patch no longer fits the installed code.
    """
    python = find_python()
    started = time.monotonic()
    report(f"installing LocalStack {RELEASE} into {home.venv} with {python} (once; about 500 MB, 1-3 min)")
    shutil.rmtree(home.venv, ignore_errors=True)
    home.root.mkdir(parents=True, exist_ok=True)
    with home.install_log.open("w") as log:
        for step in (
            [python, "-m", "venv", str(home.venv)],
            [str(home.python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *PACKAGES],
        ):
            log.write(f"$ {' '.join(step)}\n")
            log.flush()
            if subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode:
                raise BackendUnavailable(
                    f"installing LocalStack failed at `{' '.join(step[:4])} ...`; the end of "
                    f"{home.install_log}:\n{_tail(home.install_log)}"
                )
    patch_start_replay(_site_packages(home))
    home.stamp.write_text(json.dumps({"packages": list(PACKAGES), "patch": REPLAY_PATCH_ID}, indent=2) + "\n")
    return time.monotonic() - started


def _site_packages(home: Home) -> Path:
    found = sorted(home.venv.glob("lib/python3.*/site-packages"))
    if not found:
        raise BackendUnavailable(f"no site-packages folder under {home.venv}; delete {home.root} and run again")
    return found[-1]


# Upstream bug in 2026.3.0: an archived event keeps its "time" as the string
# "YYYY-MM-DDTHH:MM:SSZ", and StartReplay treats it as a datetime, so every
# replay fails with HTTP 500 (TypeError). Both places parse the string first.
REPLAY_PATCH_ID = "start-replay-time-v1"
_EVENT_TIME_FORMAT = '"%Y-%m-%dT%H:%M:%SZ"'
_REPLAY_PATCHES = (
    (
        "services/events/archive.py",
        "return dt.replace(second=0,",
        f"return (datetime.strptime(dt, {_EVENT_TIME_FORMAT}).replace(tzinfo=UTC)"
        " if isinstance(dt, str) else dt).replace(second=0,",
    ),
    (
        "services/events/utils.py",
        '"Time": event["time"],',
        f'"Time": datetime.strptime(event["time"], {_EVENT_TIME_FORMAT})'
        ' if isinstance(event["time"], str) else event["time"],',
    ),
)


def patch_start_replay(site_packages: Path) -> None:
    """Fix the StartReplay bug in the installed ``localstack`` package. Idempotent.

    Raises BackendUnavailable when a line to fix is not there (another release).
    """
    for relative, broken, fixed in _REPLAY_PATCHES:
        path = site_packages / "localstack" / relative
        text = path.read_text()
        if fixed in text:
            continue
        if text.count(broken) != 1:
            raise BackendUnavailable(
                f"cannot fix LocalStack's StartReplay bug: {path} does not hold the expected line once; "
                f"is this LocalStack {RELEASE}?"
            )
        path.write_text(text.replace(broken, fixed))


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Started:
    """A process ``up`` started: enough to find it again, and to know it is still that process."""

    name: str
    pid: int
    start_time: float  # psutil's creation time: the same PID with another one is another process
    port: int
    log: str


def read_record(home: Home) -> list[Started]:
    """The processes the last ``up`` recorded (empty when none, or the record is unreadable)."""
    try:
        rows = json.loads(home.record.read_text())
        return [Started(**row) for row in rows]
    except (OSError, ValueError, TypeError):
        return []


def _write_record(home: Home, processes: list[Started]) -> None:
    home.run.mkdir(parents=True, exist_ok=True)
    home.record.write_text(json.dumps([asdict(p) for p in processes], indent=2) + "\n")


def is_running(process: Started) -> bool:
    """True while ``process.pid`` is alive (not a zombie) and is still the process that was started."""
    return _find(process) is not None


def _find(process: Started) -> psutil.Process | None:
    """The live process ``process`` records; None when it ended, is a zombie, or its PID is now another's."""
    try:
        found = psutil.Process(process.pid)
        if found.create_time() != process.start_time or found.status() == psutil.STATUS_ZOMBIE:
            return None
        return found
    except psutil.Error:  # no such process, or not ours to look at
        return None


def _start_time(pid: int) -> float:
    """The creation time of ``pid`` (0.0 when it has already gone: then it is never found running)."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return 0.0


def start_process(service: Service, home: Home) -> Started:
    """Start ``service`` in its own session, output to its log in ``home``; the record of it."""
    home.run.mkdir(parents=True, exist_ok=True)
    with home.log(service.name).open("w") as log:
        child = subprocess.Popen(
            service.command,
            env=service.environment,
            cwd=home.run,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the caller's Ctrl-C
        )
    return Started(service.name, child.pid, _start_time(child.pid), service.port, str(home.log(service.name)))


def stop(process: Started, *, grace: float = STOP_GRACE_SECONDS) -> str:
    """Stop ``process`` and the processes it started, if it is still the process recorded; what happened, in words.

    Asks them to end (SIGTERM, or TerminateProcess on Windows), waits ``grace``
    seconds, then kills those left. Touches no process but these.
    """
    found = _find(process)
    if found is None:
        return f"{process.name} (pid {process.pid}) was not running"
    family = [found, *_descendants(found)]
    _ask_each(family, psutil.Process.terminate)
    _, alive = psutil.wait_procs(family, timeout=grace)
    if not alive:
        return f"stopped {process.name} (pid {process.pid})"
    _ask_each(alive, psutil.Process.kill)
    psutil.wait_procs(alive, timeout=5)
    return f"killed {process.name} (pid {process.pid}): it did not stop within {grace:g} s"


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    """The processes ``process`` started, and theirs (found before it stops, while they are still its own)."""
    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _ask_each(processes: list[psutil.Process], action: Callable[[psutil.Process], None]) -> None:
    """``action`` (terminate or kill) on each of ``processes``; one that has already ended is skipped."""
    for member in processes:
        try:
            action(member)
        except psutil.NoSuchProcess:
            pass


# --------------------------------------------------------------------------- health


def port_in_use(port: int) -> bool:
    """True when something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


def healthy(service: Service) -> bool:
    """True when ``service`` answers its health URL and reports itself ready."""
    try:
        with urllib.request.urlopen(service.health_url, timeout=2) as response:
            return service.ready(response.read())
    except (OSError, urllib.error.URLError, ValueError):
        return False


TOKEN_SIGNS = ("LOCALSTACK_AUTH_TOKEN", "auth token", "License activation failed")


def wait_healthy(service: Service, process: Started, deadline: float) -> None:
    """Wait until ``service`` is healthy, at most until ``deadline`` (time.monotonic).

    Raises BackendUnavailable with the end of its log when it exits or is not
    healthy in time, saying so when its log asks for an auth token.
    """
    while not healthy(service):
        if not is_running(process):
            raise _start_failure(service, process, "exited while starting")
        if time.monotonic() >= deadline:
            raise _start_failure(service, process, f"was not healthy at {service.health_url} in time")
        time.sleep(0.25)


def _start_failure(service: Service, process: Started, what: str) -> BackendUnavailable:
    log = Path(process.log)
    if _asks_for_token(log):
        what += (
            f" because it asks for an auth token, which LocalStack {RELEASE} community does not need: "
            f"another release may be installed; delete {log.parents[1]} and run again"
        )
    return BackendUnavailable(f"{service.name} {what}; the end of {log}:\n{_tail(log)}")


def _asks_for_token(log: Path) -> bool:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return False
    return any(sign.lower() in text.lower() for sign in TOKEN_SIGNS)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} could not be read)"


# --------------------------------------------------------------------------- up, down, status


@dataclass(frozen=True)
class Up:
    """What ``up`` did: the processes running, and how long installing and starting took."""

    processes: tuple[Started, ...]
    install_seconds: float | None  # None: already installed
    start_seconds: float | None  # None: already running
    environment: dict[str, str]


def up(
    home: Home | None = None, *, ports: Ports = Ports(), timeout: float = 120.0, report: Report = print
) -> Up:
    """Install LocalStack if needed, start it and the moto server beside it, wait until both are healthy.

    Idempotent: when the recorded processes still run, waits for their
    health and returns them. Raises BackendUnavailable when a port is
    taken by another process, no Python >= 3.13 exists, the install fails,
    or a service is not healthy within ``timeout`` seconds (then whatever
    was started is stopped again).
    """
    home = home or default_home()
    wanted = services(home, ports)
    recorded = read_record(home)
    by_name = {process.name: process for process in recorded}
    if set(by_name) == {s.name for s in wanted} and all(is_running(p) for p in recorded):
        deadline = time.monotonic() + timeout
        for service in wanted:
            wait_healthy(service, by_name[service.name], deadline)
        report(f"already running: {', '.join(f'{p.name} (pid {p.pid})' for p in recorded)}")
        return Up(tuple(recorded), None, None, exports(ports))
    if recorded:
        report("a previous start is only partly running; stopping what is left of it")
        down(home, report=report)
    _refuse_taken_ports(wanted)
    install_seconds = None if installed(home) else install(home, report)
    started = time.monotonic()
    processes = _start_all(wanted, home, timeout, report)
    return Up(processes, install_seconds, time.monotonic() - started, exports(ports))


def down(home: Home | None = None, *, report: Report = print) -> list[str]:
    """Stop the processes the last ``up`` recorded, only those, and forget them. Idempotent.

    Returns one line per process: stopped, killed, or was not running.
    """
    home = home or default_home()
    recorded = read_record(home)
    if not recorded:
        report("nothing to stop: no LocalStack started from here is recorded")
        return []
    lines = [stop(process) for process in reversed(recorded)]
    home.record.unlink(missing_ok=True)
    for line in lines:
        report(line)
    return lines


def _start_all(wanted: tuple[Service, ...], home: Home, timeout: float, report: Report) -> tuple[Started, ...]:
    """Start every service, record them, wait until all are healthy; on failure stop them all."""
    deadline = time.monotonic() + timeout
    processes: list[Started] = []
    try:
        for service in wanted:
            processes.append(start_process(service, home))
            _write_record(home, processes)
        for service, process in zip(wanted, processes, strict=True):
            report(f"waiting for {service.name} (pid {process.pid}) at {service.health_url}")
            wait_healthy(service, process, deadline)
    except BaseException:
        for process in reversed(processes):
            stop(process)
        home.record.unlink(missing_ok=True)
        raise
    return tuple(processes)


def _refuse_taken_ports(wanted: Iterable[Service]) -> None:
    taken = [service for service in wanted if port_in_use(service.port)]
    if taken:
        names = ", ".join(f"{HOST}:{s.port} (for {s.name})" for s in taken)
        raise BackendUnavailable(
            f"{names} already in use by a process fleetlab did not start; stop it (or find it with "
            f"`ss -ltnp`) and run again"
        )


@dataclass(frozen=True)
class ServiceState:
    """One service as ``status`` sees it."""

    name: str
    url: str
    pid: int | None  # None: not started from here
    running: bool
    healthy: bool


def status(home: Home | None = None, *, ports: Ports = Ports()) -> tuple[bool, tuple[ServiceState, ...]]:
    """Whether LocalStack is installed in ``home``, and the state of each service."""
    home = home or default_home()
    recorded = {process.name: process for process in read_record(home)}
    states = []
    for service in services(home, ports):
        process = recorded.get(service.name)
        running = process is not None and is_running(process)
        states.append(ServiceState(service.name, service.url, process.pid if process else None, running,
                                   running and healthy(service)))
    return installed(home), tuple(states)

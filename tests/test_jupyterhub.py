"""A workshop room on a real JupyterHub (deploy/jupyterhub/): three learners run lab 01 at the same time.

The hub runs the room's own configuration, with what a laptop has in place of a facilitator's
installation: the dummy authenticator, one local process per learner (each with its home in a
temporary folder), configurable-http-proxy from the npm registry (``make hub-proxy``), everything on
127.0.0.1. The test starts the learners' servers through the hub's REST API, runs the student notebook
of lab 01 in a kernel of each server through its kernels API (the websocket JupyterLab itself uses),
all three at once, and checks that each learner's progress, resources and files are their own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parents[1]
ROOM_CONFIG = REPO / "deploy" / "jupyterhub" / "jupyterhub_config.py"
pytestmark = pytest.mark.hub  # only with -m hub: `make test-hub`, which .ci/run runs

NOTEBOOK = "01_at_least_once.ipynb"
LEARNERS = ("alice", "bob", "carol.jones")
"""Hub user names (the hub lower-cases them); the third is not a name a resource prefix can carry as it is."""
TOKEN = uuid.uuid4().hex
HUB_START = 60
"""Seconds the hub and its proxy may take to answer."""
SERVER_START = 90
"""Seconds all three learners' servers may take to start."""
SOLVER = "alice"
"""The learner who also answers 01.visibility (with the reference answer), so that one progress file differs."""
NOTEBOOK_RUN = 300
"""Seconds the three notebooks may take, run at once."""


def room_config():
    """The room's configuration file as a module: its functions, without JupyterHub's loader."""
    spec = importlib.util.spec_from_file_location("fleetlab_room_config", ROOM_CONFIG)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROOM = room_config()


def in_ci() -> bool:
    """True in CI (``CI`` set and not false): there a missing proxy fails the test instead of skipping it."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def proxy_command() -> str:
    """configurable-http-proxy: the one ``make hub-proxy`` installs, else one on PATH.

    Missing, the room's tests are skipped (``make test`` installs it where npm exists), except in CI.
    """
    installed = REPO / ".fleetlab" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
    found = str(installed) if installed.exists() else shutil.which("configurable-http-proxy")
    if not found:
        missing = "configurable-http-proxy is missing: `make hub-proxy` installs it from the npm registry (needs npm)"
        if in_ci():
            pytest.fail(f"CI is set and {missing}", pytrace=False)
        pytest.skip(missing)
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def hub_config(work: Path, homes: Path, ports: dict[str, int]) -> str:
    """The room's configuration, then what stands in for a facilitator's installation here."""
    allow_root = ["--ServerApp.allow_root=True"] if os.geteuid() == 0 else []
    return f"""
load_subconfig({str(ROOM_CONFIG)!r})
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {ports["public"]}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {ports["hub"]}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports["proxy_api"]}"
c.ConfigurableHTTPProxy.command = [{proxy_command()!r}]
c.ConfigurableHTTPProxy.pid_file = {str(work / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{work / "hub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(work / "cookie_secret")!r}
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(homes) + "/{username}"!r}
c.Spawner.cmd = [{sys.executable!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.args = {allow_root!r}
c.Spawner.ip = "127.0.0.1"
c.Spawner.start_timeout = {SERVER_START}
c.Spawner.http_timeout = {SERVER_START}
c.JupyterHub.services = [{{"name": "room-test", "api_token": {TOKEN!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "room-test",
    "scopes": ["admin:users", "admin:servers", "admin:server_state", "access:servers"],
    "services": ["room-test"],
}}]
"""


@dataclass
class Hub:
    """A running hub: its process, its addresses, and every PID it started that the test must stop."""

    process: subprocess.Popen
    work: Path
    homes: Path
    public: str
    api: str
    pids: dict[int, str] = field(default_factory=dict)
    """Each process's PID and its start time, so that a PID the system gave to another process is left alone."""

    def started(self, pid: int) -> None:
        """Remember ``pid`` as a process of this room (while it runs)."""
        if (since := start_time(pid)) is not None:
            self.pids[pid] = since


def headers() -> dict[str, str]:
    return {"Authorization": f"token {TOKEN}"}


async def call(url: str, method: str = "GET", body: object = None, timeout: float = 30) -> object:
    """A request with the room-test token; the decoded JSON answer (None when empty)."""
    request = HTTPRequest(url, method=method, headers=headers(), request_timeout=timeout,
                          body=json.dumps(body or {}) if method in ("POST", "PUT") else None)
    answer = await AsyncHTTPClient().fetch(request)
    return json.loads(answer.body) if answer.body else None


async def until(what: str, deadline: float, probe) -> object:
    """Poll ``probe()`` until it returns something truthy; fail naming ``what`` past ``deadline``."""
    while True:
        try:
            found = await probe()
        except (OSError, HTTPClientError):  # not listening yet, or answering 503 while it starts
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within its deadline")
        await asyncio.sleep(0.25)  # a poll interval, not a synchronisation: the deadline bounds it


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot), or None when it has exited (a zombie counts as exited)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def stop_by_pid(pids: dict[int, str], deadline_s: float = 15) -> list[int]:
    """SIGTERM each process still running as it was recorded, SIGKILL what outlives the deadline; those killed."""

    def alive(pid: int) -> bool:
        return start_time(pid) == pids[pid]

    running = {pid for pid in pids if alive(pid)}
    for pid in running:
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + deadline_s
    while running and time.monotonic() < end:
        running = {pid for pid in running if alive(pid)}
        time.sleep(0.1)  # a poll interval, bounded by the deadline
    for pid in running:
        os.kill(pid, signal.SIGKILL)
    return sorted(running)


@contextmanager
def running_hub(work: Path, handed_out: Sequence[str]) -> Iterator[Hub]:
    """A JupyterHub with the room's configuration, on 127.0.0.1, working in ``work``; every process it started
    stopped by PID at the end. The learners of ``handed_out`` find lab 01 in their home's ``labs/``."""
    homes = work / "homes"
    homes.mkdir(parents=True)
    for learner in handed_out:  # what /etc/skel (TLJH) or the image's postStart (Kubernetes) gives a learner
        (homes / learner / "labs").mkdir(parents=True)
        shutil.copy(REPO / "labs" / NOTEBOOK, homes / learner / "labs" / NOTEBOOK)
    ports = {name: free_port() for name in ("public", "hub", "proxy_api")}
    (work / "room_test_config.py").write_text(hub_config(work, homes, ports))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETLAB_", "JUPYTER", "LOCALSTACK_"))}
    with open(work / "hub.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(work / "room_test_config.py")],
            cwd=work, env=environ, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    running_hub = Hub(process, work, homes, f"http://127.0.0.1:{ports['public']}",
                      f"http://127.0.0.1:{ports['public']}/hub/api")
    running_hub.started(process.pid)
    try:
        yield running_hub
    finally:
        proxy_pid = work / "proxy.pid"
        if proxy_pid.exists():
            running_hub.started(int(proxy_pid.read_text()))
        killed = stop_by_pid(running_hub.pids)
        process.wait(timeout=5)
        assert not killed, f"these processes ignored SIGTERM for 15 s: {killed}; see {work / 'hub.log'}"


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Iterator[Hub]:
    """The room's hub, the three learners given lab 01."""
    with running_hub(tmp_path_factory.mktemp("hub"), LEARNERS) as started:
        yield started


@dataclass
class Run:
    """What one learner's kernel showed: each cell's outputs, its errors, and when the run began and ended."""

    learner: str
    outputs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    began: float = 0.0
    ended: float = 0.0
    facts: dict = field(default_factory=dict)


async def execute(channel, code: str, deadline: float) -> tuple[str, list[str]]:
    """Run ``code`` in the kernel behind ``channel``: its text output and its errors, when the kernel is idle."""
    msg_id = uuid.uuid4().hex
    await channel.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "room-test",
                   "session": "room-test", "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }))
    text, errors, replied, idle = [], [], False, False
    while not (replied and idle):
        try:
            raw = await asyncio.wait_for(channel.read_message(), timeout=max(deadline - time.monotonic(), 0))
        except TimeoutError:
            pytest.fail(f"a cell was still running at the deadline: {code[:80]!r}")
        if raw is None:
            pytest.fail(f"the kernel's websocket closed while running {code[:80]!r}")
        message = json.loads(raw)
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            text.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            text.append(content["data"].get("text/plain", ""))
        elif kind == "error":
            errors.append(f"{content['ename']}: {content['evalue']}")
        elif kind == "execute_reply":
            replied = True
        elif kind == "status" and content["execution_state"] == "idle":
            idle = True
    return "".join(text), errors


FACTS = """
import json, os
from fleetlab.course.grading.progress import progress_file
print(json.dumps({"pid": os.getpid(), "home": os.path.expanduser("~"), "progress": str(progress_file()),
                  "learner": os.environ.get("FLEETLAB_LEARNER"), "backend": os.environ.get("FLEETLAB_BACKEND")}))
"""


def reference_answer(check_id: str) -> str:
    """The instructor notebook's cell that answers ``check_id`` and checks it."""
    solutions = json.loads((REPO / "labs" / "solutions" / NOTEBOOK).read_text(encoding="utf-8"))
    return next("".join(cell["source"]) for cell in solutions["cells"]
                if cell["cell_type"] == "code" and f'check("{check_id}"' in "".join(cell["source"]))


async def run_lab(hub: Hub, learner: str, deadline: float) -> Run:
    """Open the learner's copy of lab 01 through their server; in a new kernel, FACTS, then every code cell."""
    server = f"{hub.public}/user/{learner}"
    notebook = await call(f"{server}/api/contents/labs/{NOTEBOOK}")
    kernel = await call(f"{server}/api/kernels", "POST", {"name": "python3", "path": f"labs/{NOTEBOOK}"})
    url = f"{server.replace('http', 'ws', 1)}/api/kernels/{kernel['id']}/channels"
    channel = await websocket_connect(HTTPRequest(url, headers=headers(), request_timeout=30))
    run = Run(learner)
    try:
        facts, errors = await execute(channel, FACTS, deadline)
        assert not errors, f"{learner}: {errors}"
        run.facts = json.loads(facts)
        hub.started(run.facts["pid"])
        run.began = time.monotonic()
        for cell in notebook["content"]["cells"]:
            if cell["cell_type"] == "code":
                text, errors = await execute(channel, cell["source"], deadline)
                run.outputs.append(text)
                run.errors += errors
        if learner == SOLVER:
            text, errors = await execute(channel, reference_answer("01.visibility"), deadline)
            run.outputs.append(text)
            run.errors += errors
        run.ended = time.monotonic()
    finally:
        channel.close()
    return run


async def start_servers(hub: Hub) -> None:
    """Create the learners and start their servers at once through the hub's REST API; wait until each is ready."""
    async def hub_answers():
        if hub.process.poll() is not None:
            log = (hub.work / "hub.log").read_text(errors="replace")[-3000:]
            pytest.fail(f"the hub exited with {hub.process.returncode} before answering:\n{log}")
        return await call(f"{hub.api}/")

    await until("the hub's API", time.monotonic() + HUB_START, hub_answers)
    await call(f"{hub.api}/users", "POST", {"usernames": list(LEARNERS)})
    await asyncio.gather(*(call(f"{hub.api}/users/{learner}/server", "POST", {}) for learner in LEARNERS))

    async def ready(learner: str):
        server = (await call(f"{hub.api}/users/{learner}"))["servers"].get("", {})
        if server.get("state", {}).get("pid"):
            hub.started(server["state"]["pid"])
        return server.get("ready")

    deadline = time.monotonic() + SERVER_START
    for learner in LEARNERS:
        await until(f"{learner}'s server", deadline, lambda learner=learner: ready(learner))


async def stop_servers(hub: Hub) -> None:
    """Stop the learners' servers at once through the hub's REST API (their kernels stop with them)."""
    await asyncio.gather(*(call(f"{hub.api}/users/{learner}/server", "DELETE") for learner in LEARNERS))

    async def stopped(learner: str):
        return not (await call(f"{hub.api}/users/{learner}"))["servers"]

    deadline = time.monotonic() + SERVER_START
    for learner in LEARNERS:
        await until(f"{learner}'s server to stop", deadline, lambda learner=learner: stopped(learner))


@pytest.fixture(scope="module")
def room(hub) -> dict[str, Run]:
    """The three learners' runs of lab 01, started together."""

    async def workshop() -> dict[str, Run]:
        await start_servers(hub)
        try:
            deadline = time.monotonic() + NOTEBOOK_RUN
            runs = await asyncio.gather(*(run_lab(hub, learner, deadline) for learner in LEARNERS))
        finally:
            await stop_servers(hub)
        return {run.learner: run for run in runs}

    # Its own thread: in a worker that also ran the browser tests, Playwright's session-long event loop
    # is the running loop of the main thread, and asyncio.run refuses to start a second one there.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, workshop()).result()


def test_every_learner_ran_lab_01_without_an_error_at_the_same_time_as_the_others(room):
    for run in room.values():
        assert run.errors == [], f"{run.learner}: {run.errors}"
        assert run.outputs[0].startswith("lab 01 on moto"), run.outputs[0][:200]
    assert max(run.began for run in room.values()) < min(run.ended for run in room.values())


def banner_prefix(run: Run) -> str:
    """The resource prefix lab 01's banner printed in this learner's kernel (``resources: fl-...-*``)."""
    found = re.search(r"resources: (fl-[a-z0-9-]+-)\*", run.outputs[0])
    assert found, f"{run.learner}'s banner names no resources: {run.outputs[0][:300]}"
    return found.group(1)


def test_each_learner_has_their_own_resource_prefix_and_their_own_moto(room):
    prefixes = {learner: banner_prefix(run) for learner, run in room.items()}
    for learner, run in room.items():
        label = ROOM.learner_label(learner)
        assert run.facts["learner"] == label and run.facts["backend"] == "moto"
        assert re.fullmatch(rf"fl-{label}-01-[0-9a-f]{{6}}-", prefixes[learner])
    assert len(set(prefixes.values())) == len(LEARNERS)
    assert ROOM.learner_label("carol.jones") != "carol.jones" and ROOM.learner_label("carol.jones").startswith("carol")


def test_each_learners_progress_is_in_their_own_home_and_holds_only_what_they_did(room, hub):
    for learner, run in room.items():
        home = hub.homes / learner
        assert Path(run.facts["home"]) == home
        assert Path(run.facts["progress"]) == home / ".fleetlab" / "progress.json"
        checks = json.loads((home / ".fleetlab" / "progress.json").read_text())["checks"]
        solver = learner == SOLVER
        assert {check: (result["status"], result["attempts"]) for check, result in checks.items()} == {
            "01.visibility": ("public pass", 2) if solver else ("not yet", 1), "01.heartbeat": ("not yet", 1)}
    everywhere = sorted(hub.work.rglob("progress.json"))
    assert everywhere == sorted(hub.homes / learner / ".fleetlab" / "progress.json" for learner in LEARNERS)


def test_no_learners_home_holds_a_trace_of_another_learner(room, hub):
    for learner in LEARNERS:
        others = [other for other in LEARNERS if other != learner]
        marks = [mark.encode() for other in others
                 for mark in (f"/{other}/", banner_prefix(room[other]), f"fl-{ROOM.learner_label(other)}-")]
        for path in (hub.homes / learner).rglob("*"):
            if path.is_file():
                content = path.read_bytes()
                assert not [mark for mark in marks if mark in content], f"{path} mentions another learner"


def test_every_process_the_room_started_is_known_by_pid(room, hub):
    kernels = {run.facts["pid"] for run in room.values()}
    assert len(kernels) == len(LEARNERS) and kernels <= hub.pids.keys()
    assert len(hub.pids) >= 1 + 2 * len(LEARNERS)  # the hub, each learner's server and kernel

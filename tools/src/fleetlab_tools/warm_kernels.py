"""Fresh kernels forked from a warm template: the heavy imports are paid once per batch, not once per notebook.

A kernel that starts from nothing spends about 6 s of CPU before a lab's
first cell has done anything of its own: Python and ipykernel, boto3 and
moto, moto's Step Functions parser, matplotlib, fleetlab. ``WarmKernels``
starts one *template* process that imports all of that (``PRELOADED``) and
then waits on a Unix socket. The kernelspec it writes (``SPEC_NAME``) runs
this module's launcher; the launcher asks the template for a kernel, the
template forks, and the child becomes the kernel: its own process and
session, the launcher's environment, working folder and connection file.
No cell of any notebook ever runs in the template, so every notebook still
gets a fresh kernel process of its own.
A template started ``--sealed`` (the grader's) has each kernel seal itself
in the forked child before it starts (``fleetlab.course.judge.sandbox``).

jupyter_client sees the launcher as the kernel's process: the launcher
passes SIGINT and SIGTERM on to the kernel and exits when the kernel does;
the kernel kills itself (and its process group) when the launcher dies,
even by SIGKILL, because the socket between them closes.

The launcher falls back to a plain ``ipykernel`` (so the kernelspec works
anywhere) when ``WARM_VARIABLE`` is unset, when the template is gone, or
when the kernel's environment differs from the template's in a variable
that a preloaded module reads at import (``IMPORT_TIME_VARIABLES``).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from fleetlab.core.errors import FleetlabError
from fleetlab_tools.kernel_launcher import STANDARD_STREAMS, WARM_VARIABLE

SPEC_NAME = "fleetlab-warm"
"""The kernelspec whose launcher forks kernels from the template."""
PRELOADED = (
    "ipykernel.kernelapp",
    "matplotlib.pyplot",
    "ipywidgets",
    "jsonschema",
    "boto3",
    "moto",
    "moto.stepfunctions.parser.models",
    "fleetlab",
    "fleetlab.course",
    "fleetlab.display",
)
"""What the template imports: what every lab's kernel would otherwise import for itself."""
IMPORT_TIME_VARIABLES = re.compile(r"^(PYTHON\w*|MOTO_\w+|TEST_SERVER_MODE|MPL\w+|VIRTUAL_ENV)$")
"""Variables read while a preloaded module is imported: a kernel must agree with the template on all of them."""
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
MODULE = "fleetlab_tools.warm_kernels"
_READY = b"ready\n"
_MAX_REQUEST = 1 << 20


class WarmKernelsFailed(FleetlabError):
    """The kernel template did not start; no kernel was forked."""


class WarmKernels:
    """A kernel template process and the kernelspec that forks from it; a context manager.

    With ``sealed``, every kernel is sealed in a sandbox of its own
    (``fleetlab.course.judge.sandbox``): it sees its working folder and the
    folder of its sockets, the interpreter and the library, nothing else.
    ``env`` is the template's environment: every kernel forked from it should
    differ from it only in variables no preloaded module reads at import
    (``HOME``, ``FLEETLAB_HOME``...). ``environment()`` is what to add to the
    environment of a process that starts kernels (nbval, nbclient, the grader).
    Raises WarmKernelsFailed when the template does not come up within ``startup`` seconds.
    """

    def __init__(self, env: Mapping[str, str], *, startup: float = 60, sealed: bool = False) -> None:
        self._env = dict(env)
        self._sealed = sealed
        self._startup = startup
        self._folder = Path(tempfile.mkdtemp(prefix="fleetlab-warm-"))
        self.socket_path = self._folder / "template.sock"
        self.spec_folder = self._folder / "kernels"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> WarmKernels:
        write_kernelspec(self.spec_folder / SPEC_NAME)
        self._process = subprocess.Popen(
            [sys.executable, "-m", MODULE, "serve", str(self.socket_path), *(["--sealed"] if self._sealed else [])],
            env=self._env, cwd=self._folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        )
        if not _await_ready(self._process, self._startup):
            code = self._process.poll()
            self.close()
            why = f"exited with code {code}" if code is not None else f"was not ready within {self._startup:g} s"
            raise WarmKernelsFailed(f"the kernel template did not start: it {why} "
                                    f"(`python -m {MODULE} serve SOCKET` shows why)")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The template's process id while it runs; every warm kernel's parent."""
        return None if self._process is None else self._process.pid

    def environment(self) -> dict[str, str]:
        """Variables that make a kernel started under them come from this template."""
        jupyter_path = os.pathsep.join(filter(None, [str(self.spec_folder.parent), os.environ.get("JUPYTER_PATH")]))
        return {WARM_VARIABLE: str(self.socket_path), "JUPYTER_PATH": jupyter_path}

    def close(self) -> None:
        """Stop the template (the kernels forked from it live on until their launchers end). Idempotent."""
        if self._process is not None:
            self._process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
            self._process = None
        for path in (self.socket_path, self.spec_folder / SPEC_NAME / "kernel.json"):
            path.unlink(missing_ok=True)
        for folder in (self.spec_folder / SPEC_NAME, self.spec_folder, self._folder):
            with contextlib.suppress(OSError):
                folder.rmdir()


def kernel_name(env: Mapping[str, str] | None = None) -> str:
    """The kernelspec to start kernels under ``env`` (default: this process's) with: warm when it has a template."""
    return SPEC_NAME if WARM_VARIABLE in (os.environ if env is None else env) else "python3"


def write_kernelspec(folder: Path) -> None:
    """Write the ``fleetlab-warm`` kernelspec (this Python running this module's launcher) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "fleetlab_tools.kernel_launcher", "{connection_file}"],
        "display_name": "Python 3 (fleetlab, warm)",
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")


def _await_ready(process: subprocess.Popen[bytes], seconds: float) -> bool:
    timer = threading.Timer(seconds, process.kill)
    timer.start()
    try:
        return process.stdout.readline() == _READY
    finally:
        timer.cancel()


# --- the template --------------------------------------------------------------------------------------------


def serve(socket_path: str, *, sealed: bool = False) -> None:
    """Import ``PRELOADED``, listen on ``socket_path`` and fork a kernel for each launcher that asks; never returns.

    With ``sealed``, each kernel seals itself before it starts (``_seal_kernel``); the template dies with its parent.
    """
    if sealed:
        from fleetlab.course.judge import sandbox

        sandbox.die_with_parent()  # a killed grader leaves no template behind
    template_env = dict(os.environ)
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)  # as ipykernel sets it, before matplotlib reads it
    for name in PRELOADED:
        importlib.import_module(name)
    os.environ.clear()
    os.environ.update(template_env)
    gc.freeze()  # a kernel's collector never walks (so never copies the pages of) what the template imported
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked kernels are reaped by the system
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    sys.stdout.buffer.write(_READY)
    sys.stdout.flush()
    while True:
        connection, _ = listener.accept()
        try:
            request, streams = _read_request(connection)
        except (OSError, ValueError):
            connection.close()  # that launcher is gone or spoke nonsense: it starts a plain kernel
            continue
        try:
            refusal = _refusal(request, streams, template_env)
            if refusal:
                connection.sendall(json.dumps({"refused": refusal}).encode() + b"\n")
                continue
            pid = os.fork()
            if pid == 0:
                listener.close()
                _become_kernel(connection, request, streams, sealed=sealed)
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            pass  # the launcher left before it heard back: its kernel dies with the closed socket
        finally:
            connection.close()
            for stream in streams:
                os.close(stream)


def _read_request(connection: socket.socket) -> tuple[dict, list[int]]:
    """The launcher's request and its standard streams (sent along with the request's first bytes)."""
    data, streams, _, _ = socket.recv_fds(connection, _MAX_REQUEST, len(STANDARD_STREAMS))
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk or len(data) > _MAX_REQUEST:
            for stream in streams:
                os.close(stream)
            raise ValueError("incomplete request")
        data += chunk
    return json.loads(data), streams


def _refusal(request: Mapping, streams: Sequence[int], template_env: Mapping[str, str]) -> str:
    """Why this template cannot give the request its kernel ("" when it can)."""
    if len(streams) != len(STANDARD_STREAMS):
        return "the launcher sent no standard streams"
    if request.get("executable") != sys.executable:
        return f"the template runs {sys.executable}, the kernel wants {request.get('executable')}"
    if threading.active_count() != 1:
        return "the template has started threads; forking it is not safe"
    env = request.get("env", {})
    differing = sorted(name for name in set(env) | set(template_env)
                       if IMPORT_TIME_VARIABLES.match(name) and env.get(name) != template_env.get(name))
    return f"the kernel's {', '.join(differing)} differ from the template's" if differing else ""


def _become_kernel(connection: socket.socket, request: Mapping, streams: Sequence[int], *, sealed: bool) -> None:
    """In the forked child: take the launcher's streams, environment and folder, run the kernel, exit with it."""
    code = 1
    try:
        for stream, standard in zip(streams, STANDARD_STREAMS):
            os.dup2(stream, standard)
            os.close(stream)
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        del sys.path[0]  # the template's folder, put there by `-m`; ipykernel_launcher drops it too
        connection_file = _seal_kernel(connection, request) if sealed else request["connection_file"]
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [sys.executable, "-f", connection_file]
        _reseed()
        threading.Thread(target=_die_with_launcher, args=(connection,), daemon=True).start()
        from ipykernel.kernelapp import IPKernelApp

        IPKernelApp.launch_instance(argv=["-f", connection_file])
        code = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


SEALED_CONNECTION_FILE = "/tmp/kernel.json"
SHARED_READ_ONLY = ("MPLCONFIGDIR", "FLEETLAB_FIDELITY_CACHE")
"""Folders of caches a batch's kernels share, prebuilt: each sealed kernel reads them and cannot write them."""


def _seal_kernel(connection: socket.socket, request: Mapping) -> str:
    """Seal this kernel (``sandbox.seal``): it sees its working folder and its sockets' folder (IPC transport),
    the batch's shared caches read-only, the interpreter and the library. Returns its connection file, a copy
    in its private ``/tmp``. Only the launcher's socket and the standard streams stay open."""
    from fleetlab.course.judge import sandbox

    info = Path(request["connection_file"]).read_bytes()
    parsed = json.loads(info)
    if parsed.get("transport") != "ipc":
        raise WarmKernelsFailed("a sealed kernel has no network: start it with the IPC transport")
    os.closerange(3, connection.fileno())
    os.closerange(connection.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
    shared = [request["env"][name] for name in SHARED_READ_ONLY if request["env"].get(name)]
    view = sandbox.learner_view(writable=[request["cwd"], os.path.dirname(parsed["ip"])],
                                read_only=[path for path in shared if os.path.isdir(path)],
                                python_path=request["env"].get("PYTHONPATH", ""))
    sandbox.seal(view)
    os.setsid()  # a session of its own inside the sandbox: what kills its group stays inside
    Path(SEALED_CONNECTION_FILE).write_bytes(info)
    os.chmod(SEALED_CONNECTION_FILE, 0o600)
    return SEALED_CONNECTION_FILE


def _reseed() -> None:
    """Forked children share the template's random state; give each kernel its own (``random`` does so itself)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def _die_with_launcher(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while connection.recv(1):
            pass
    os.killpg(0, signal.SIGKILL)


# --- running a command with a template -----------------------------------------------------------------------


@contextlib.contextmanager
def warm_environment(env: Mapping[str, str] | None = None) -> Iterator[dict[str, str]]:
    """A template started with ``env`` (default: this process's), and ``env`` plus what selects it."""
    base = dict(os.environ if env is None else env)
    with WarmKernels(base) as warm:
        yield {**base, **warm.environment()}


def run(command: Sequence[str]) -> int:
    """Run ``command`` with a template for its kernels (``fleetlab-warm``); its exit code."""
    with warm_environment() as env:
        return subprocess.call(list(command), env=env)


def main(argv: Sequence[str]) -> int:
    """``serve SOCKET`` or ``run -- COMMAND...``."""
    usage = f"usage: python -m {MODULE} serve SOCKET [--sealed] | run -- COMMAND..."
    if len(argv) in (2, 3) and argv[0] == "serve" and argv[2:] in ([], ["--sealed"]):
        serve(argv[1], sealed=argv[2:] == ["--sealed"])
    if len(argv) >= 3 and argv[0] == "run" and argv[1] == "--":
        return run(argv[2:])
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

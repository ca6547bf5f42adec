"""The ``fleetlab-warm`` kernelspec's launcher: a kernel forked from the warm template, or a plain one.

``python -m fleetlab_tools.kernel_launcher CONNECTION_FILE`` sends the
template (its socket in ``FLEETLAB_WARM_KERNELS``) this process's
environment, working folder, connection file and standard streams, and then
stands in for the forked kernel, which jupyter_client cannot see: SIGINT and
SIGTERM are passed on to it, and this process exits when it does. When there
is no template, or it refuses (see ``fleetlab_tools.warm_kernels``), this
process becomes a plain ``ipykernel`` instead. It imports nothing but the
standard library, so it costs a few hundredths of a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

WARM_VARIABLE = "FLEETLAB_WARM_KERNELS"
DIES_WITH_PARENT = "FLEETLAB_KERNEL_DIES_WITH_PARENT"
"""Set (to 1) by a starter that must leave no kernel behind when it dies: the grader."""
STANDARD_STREAMS = (0, 1, 2)


def launch(connection_file: str) -> int:
    """Stand in for a warm kernel until it ends (its exit code is not known here: 0); or become a plain kernel."""
    if os.environ.get(DIES_WITH_PARENT) == "1":
        _die_with_parent()
    template = os.environ.get(WARM_VARIABLE)
    connection = _ask_template(template, connection_file) if template else None
    pid = _read_pid(connection) if connection is not None else None
    if pid is None:
        _become_plain_kernel(connection_file)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda received, frame: _forward(pid, received))
    with connection, contextlib.suppress(OSError):
        while connection.recv(1):
            pass
    return 0


def _ask_template(template: str, connection_file: str) -> socket.socket | None:
    request = {"executable": sys.executable, "env": dict(os.environ), "cwd": os.getcwd(),
               "connection_file": os.path.abspath(connection_file)}
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(template)
        socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], list(STANDARD_STREAMS))
    except OSError:
        connection.close()
        return None
    return connection


def _read_pid(connection: socket.socket) -> int | None:
    reply = b""
    with contextlib.suppress(OSError):
        while not reply.endswith(b"\n") and (chunk := connection.recv(4096)):
            reply += chunk
    try:
        answer = json.loads(reply)
    except ValueError:
        answer = {"refused": "the template did not answer"}
    if "refused" in answer:
        print(f"fleetlab: starting a plain kernel, not a warm one: {answer['refused']}", file=sys.stderr)
    return answer.get("pid")


def _become_plain_kernel(connection_file: str) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file])


def _die_with_parent() -> None:
    """SIGTERM this launcher when the thread that started it ends (Linux): it passes it on to its kernel.
    ``sandbox.die_with_parent`` does the same; a launcher imports nothing of fleetlab, so it stays cheap."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m fleetlab_tools.kernel_launcher CONNECTION_FILE", file=sys.stderr)
        sys.exit(2)
    sys.exit(launch(sys.argv[1]))

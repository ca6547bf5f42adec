"""A sealed process: its own namespaces, a filesystem view of what it needs, limits, and nothing left behind.

``seal(view, limits)`` is called in a freshly forked child that runs one
thread (a kernel forked from the warm template, an answer process forked
from its zygote). When it returns, the caller is the *workload*, sealed:

- its own mount, PID, network, IPC and UTS namespaces: it sees a root made of
  ``view.read_only`` paths (bound read-only), ``view.writable`` folders,
  a private ``/tmp``, a minimal ``/dev`` and a ``/proc`` of its own PID
  namespace; nothing else of the machine (no batch folder, no instructor's
  package, no other learner), no network but a downed loopback, no process
  but its own;
- an unprivileged user: when the caller is root, a uid of its own
  (``UID_BASE`` + the caller's pid) that owns the writable folders; else the
  caller's uid in a user namespace of its own, so the process limit counts
  this sandbox's processes only; no capability, ``no_new_privs``;
- limits on memory, processes, open files, file size and CPU (``Limits``).

Two processes stand behind the workload and never return from ``seal``: the
*warden* (the caller itself, outside the namespaces) and the namespace's
init (PID 1), which reaps and passes SIGINT and SIGTERM on. When the workload
ends, init ends with its exit status, the kernel kills everything the
workload started, and the warden exits with the same status. When the
warden dies, init is killed (``PR_SET_PDEATHSIG``), and the namespace with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import resource
import signal
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fleetlab.core.errors import FleetlabError

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
AT_RECURSIVE = 0x8000
SYS_PIVOT_ROOT, SYS_MOUNT_SETATTR, SYS_CAPSET = 155, 442, 126
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
UID_BASE = 2_000_000_000
"""A root caller's sandboxes run as ``UID_BASE + pid``: a uid no account has, one per live sandbox."""
DEVICES = ("null", "zero", "full", "random", "urandom")
OLD_ROOT = "/.host"


class SandboxUnavailable(FleetlabError):
    """No sandbox can be made on this machine (no namespaces, not Linux): learner code cannot be sealed here."""


@dataclass(frozen=True)
class Limits:
    """What a sealed process tree may use: bytes of address space per process, processes (threads count),
    open files per process, bytes per file written, CPU seconds per process."""

    memory: int = 4 << 30
    processes: int = 256
    open_files: int = 1024
    file_size: int = 256 << 20
    cpu_seconds: int = 900


@dataclass(frozen=True)
class View:
    """What a sealed process sees, each at its own path: ``read_only`` paths, ``writable`` folders, and,
    inside them, ``hidden`` paths that are made empty (a file) or an empty folder. ``tmp_bytes`` bounds
    its private ``/tmp``."""

    read_only: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    tmp_bytes: int = 256 << 20


def python_view(*, extra_read_only: Iterable[str] = (), writable: Iterable[str] = (),
                hidden: Iterable[str] = ()) -> View:
    """The view a Python process of this interpreter needs: the system's libraries, ``/etc``, the
    interpreter's install and this environment's prefix, and ``extra_read_only`` (the library's source)."""
    system = [path for path in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc") if os.path.exists(path)]
    pythons = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.base_prefix, sys.prefix}
    return View(read_only=tuple(dict.fromkeys([*system, *sorted(pythons), *extra_read_only])),
                writable=tuple(writable), hidden=tuple(hidden))


def learner_view(*, writable: Iterable[str] = (), read_only: Iterable[str] = (), python_path: str = "") -> View:
    """What a learner's process sees: Python, the learner's library (``fleetlab``), the folders of
    ``python_path`` (a ``PYTHONPATH``) that hold nothing of the instructor's, and ``read_only``, read-only;
    ``writable``; and no trace of the instructor's package (its files, its metadata, its entry points)."""
    import fleetlab

    from fleetlab.course.grading.learner import INSTRUCTOR_PACKAGE

    library = os.path.dirname(os.path.dirname(os.path.realpath(fleetlab.__file__)))
    traces = instructor_traces()
    sources = _instructor_sources(traces)
    searched = [folder for folder in python_path.split(os.pathsep)
                if os.path.isdir(folder) and not os.path.exists(os.path.join(folder, INSTRUCTOR_PACKAGE))
                and not any(_holds(folder, kept) for kept in (*sources, tempfile.gettempdir(), "/"))]
    return python_view(extra_read_only=[library, *searched, *read_only], writable=writable, hidden=traces)


def _instructor_sources(traces: Iterable[str]) -> list[str]:
    """Where the instructor's code lives outside the environment: the folders its ``.pth`` file points at."""
    folders = []
    for trace in traces:
        if trace.endswith(".pth") and os.path.isfile(trace):
            lines = Path(trace).read_text(encoding="utf-8", errors="replace").splitlines()
            folders += [os.path.realpath(line.strip()) for line in lines if line.strip() and not line.startswith(("#", "import"))]
    return folders


def _holds(folder: str, path: str) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it."""
    folder = os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def instructor_traces() -> tuple[str, ...]:
    """The top-level entries of the environment that belong to the instructor's distribution (its package or
    the file that points at its source, its ``dist-info``): made empty in a learner's view."""
    from importlib import metadata

    from fleetlab.course.grading.learner import INSTRUCTOR_PACKAGE

    try:
        distribution = metadata.distribution(INSTRUCTOR_PACKAGE.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return ()
    top = set()
    for file in distribution.files or ():
        located = Path(str(distribution.locate_file(file)))
        relative = Path(os.path.relpath(located, distribution.locate_file("")))
        if relative.parts and relative.parts[0] != "..":
            top.add(str(Path(distribution.locate_file("")) / relative.parts[0]))
    return tuple(sorted(top))


def seal(view: View, limits: Limits = Limits()) -> None:
    """Seal this process (see the module's docstring); returns in the sealed workload only.

    Raises SandboxUnavailable, before anything changed, when the namespaces
    cannot be made; after that, a failure ends the process (exit code 121).
    """
    owner = _sandbox_owner()
    _enter_namespaces()
    try:
        for folder in view.writable:
            if owner is not None:
                os.chown(folder, owner, owner)
        _build_view(view)
    except BaseException as exc:
        _die(f"the sandbox's view could not be made: {exc}")
    init = os.fork()
    if init:
        _warden(init)
    try:
        _become_init(view, owner, limits)
    except BaseException as exc:
        _die(f"the sandbox could not be entered: {exc}")
    _forget_the_host()


def _forget_the_host() -> None:
    """Drop what the import system remembers of the host's files: search-path entries the view does not hold,
    and every finder's cached listing (a cached listing would still offer a module whose file is gone)."""
    sys.path[:] = [entry for entry in sys.path if not entry or os.path.isdir(entry) or os.path.isfile(entry)]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Have the kernel send ``signum`` to this process when the thread that started it ends (Linux; a no-op
    elsewhere): a killed grader leaves none of its helpers behind."""
    with contextlib.suppress(AttributeError):
        _libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def probe() -> str:
    """Why no sandbox can be made here ("" when one can): a forked child seals itself and reports."""
    if not sys.platform.startswith("linux"):
        return f"learner code is sealed with Linux namespaces, and this is {sys.platform}"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            seal(python_view())
            message = "" if not os.path.exists(OLD_ROOT) and os.getpid() == 2 else "the sandbox leaked its host"
        except BaseException as exc:
            message = str(exc) or type(exc).__name__
        os.write(write, message.encode()[:4000] or b"ok")
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        message = said.read().decode("utf-8", "replace")
    os.waitpid(pid, 0)
    return "" if message == "ok" else (message or "the sandbox's test process died")


# --- the steps --------------------------------------------------------------------------------------------------


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def _sandbox_owner() -> int | None:
    """The uid the sandbox runs as when the caller is root; None when it keeps the caller's."""
    return UID_BASE + os.getpid() if os.geteuid() == 0 else None


def _enter_namespaces() -> None:
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    uid, gid = os.geteuid(), os.getegid()
    rooted = uid == 0
    try:
        _check(_libc.unshare(flags if rooted else flags | CLONE_NEWUSER), "unshare")
    except OSError as exc:
        raise SandboxUnavailable(f"this machine cannot make the namespaces a sandbox needs ({exc}); unprivileged "
                                 "user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, "
                                 "user.max_user_namespaces)") from None
    if not rooted:  # a non-dumpable process (the judge's) has its /proc files owned by root: dumpable, it owns them
        _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl")
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_bytes(source), _bytes(target), _bytes(kind), ctypes.c_ulong(flags), _bytes(data)),
           f"mount {target}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _make_read_only(target: str) -> None:
    """Make ``target`` and every mount under it read-only, without set-uid programs or devices."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
    _check(_libc.syscall(SYS_MOUNT_SETATTR, -100, _bytes(target), AT_RECURSIVE, ctypes.byref(attr),
                         ctypes.sizeof(attr)), f"read-only {target}")


def _bind(host: str, target: str, *, read_only: bool) -> None:
    source = OLD_ROOT + host
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        Path(target).touch()
    _mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        _make_read_only(target)


def _build_view(view: View) -> None:
    """The new root: a small tmpfs holding bound paths, ``/dev``, ``/tmp`` and ``/proc``; the host stays at
    ``OLD_ROOT`` until init has mounted its ``/proc``."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=8m")
    os.chdir("/tmp")
    os.mkdir(OLD_ROOT[1:])
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", _bytes(OLD_ROOT[1:])), "pivot_root")
    os.chdir("/")
    os.mkdir("/tmp")
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={view.tmp_bytes}")
    for path in view.read_only:
        if os.path.lexists(OLD_ROOT + path):
            _bind(path, path, read_only=True)
    for path in view.writable:
        _bind(path, path, read_only=False)
    for path in view.hidden:
        _hide(path)
    _make_dev()
    os.makedirs("/proc", exist_ok=True)


def _hide(path: str) -> None:
    if not os.path.lexists(path):
        return
    if os.path.isdir(path):
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0555,size=4k")
    else:
        _mount(OLD_ROOT + "/dev/null", path, None, MS_BIND)
        _make_read_only(path)


def _make_dev() -> None:
    os.makedirs("/dev", exist_ok=True)
    _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in DEVICES:
        Path("/dev", name).touch()
        _mount(f"{OLD_ROOT}/dev/{name}", f"/dev/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/shm")
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m")


def _warden(init: int) -> None:
    """Outside the namespaces: pass SIGINT on to init, kill it on SIGTERM, exit as the workload exits."""
    signal.signal(signal.SIGINT, lambda *_: _signal(init, signal.SIGINT))
    signal.signal(signal.SIGTERM, lambda *_: _signal(init, signal.SIGKILL))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            _, status = os.waitpid(init, 0)
        except ChildProcessError:
            os._exit(1)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            os._exit(_exit_code(status))


def _become_init(view: View, owner: int | None, limits: Limits) -> None:
    """PID 1: mount ``/proc``, let go of the host, drop every privilege, set the limits, fork the workload,
    reap until it ends."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _check(_libc.umount2(_bytes(OLD_ROOT), MNT_DETACH), "umount the host")
    os.rmdir(OLD_ROOT)
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _drop_privileges(owner)
    _set_limits(limits)
    workload = os.fork()
    if workload == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        return
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda received, frame: _signal(workload, received))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == workload and (os.WIFEXITED(status) or os.WIFSIGNALED(status)):
            os._exit(_exit_code(status))


def _drop_privileges(owner: int | None) -> None:
    if owner is not None:
        os.setgroups([])
        os.setresgid(owner, owner, owner)
        os.setresuid(owner, owner, owner)
    _drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


def _drop_capabilities() -> None:
    empty = (ctypes.c_uint32 * 6)()
    _check(_libc.syscall(SYS_CAPSET, ctypes.byref(_CapHeader(0x20080522, 0)), empty), "capset")


def _set_limits(limits: Limits) -> None:
    for which, value in ((resource.RLIMIT_AS, limits.memory), (resource.RLIMIT_NPROC, limits.processes),
                         (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_FSIZE, limits.file_size),
                         (resource.RLIMIT_CPU, limits.cpu_seconds), (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(which)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, cap))


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _exit_code(status: int) -> int:
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _die(why: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"fleetlab sandbox: {why}\n".encode())
    os._exit(121)


__all__ = ["Limits", "SandboxUnavailable", "View", "probe", "python_view", "seal"]

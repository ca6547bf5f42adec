"""The two ways into the learners' homes: a JupyterHub's REST API, or the home folders on this machine.

``Hub`` talks to a JupyterHub with an API token whose scopes list the users, start and stop their
servers and reach them (``NEEDED_SCOPES``; a service with the ``admin:users``, ``admin:servers`` and
``access:servers`` scopes has them). A learner's home is their server's Contents API: a stopped server
is started for the work and stopped again after it, so the room is left as it was found; one that is
starting is waited for.

``HomeFolders`` reads and writes the homes directly, as on The Littlest JupyterHub, where learner
``alice``'s home is ``/home/jupyter-alice``: a template with ``{username}`` in it, the learners being
the folders it matches (TLJH shortens a long name: ``jupyter-<name>`` of 26 characters or more becomes
its first 26 and five hex digits of its hash, and that folder's part is the learner id here). No link is followed on the way, and a file written there is given to the
home's owner.

Both give a ``Home`` per learner, addressed by paths relative to the home (``labs/01_x.ipynb``).
"""

from __future__ import annotations

import base64
import glob
import json
import os
import stat
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from fleetlab.core.errors import BackendUnavailable, ConfigError, InvalidInput

NEEDED_SCOPES = {
    "list:users": "list the room's users",
    "servers": "start a stopped server and stop it again",
    "access:servers": "read and write files through each learner's server",
}
MAX_FILE_BYTES = 32 * 2**20
"""The most a file read from a home may weigh (a notebook with its outputs)."""
AT_ONCE = 8
"""Learners' servers a step works on at the same time: a server's start is mostly waiting (JupyterHub lets
100 start at once by default, ``JupyterHub.concurrent_spawn_limit``)."""
POLL = 0.5
"""Seconds between two looks at a server that is starting or stopping (the deadline bounds the wait)."""


@dataclass(frozen=True)
class Entry:
    """A name in a home's folder and its kind: ``file``, ``directory`` or ``other`` (a link, a device)."""

    name: str
    kind: str


class Home(Protocol):
    """One learner's home."""

    def list(self, folder: str) -> list[Entry] | None:
        """The entries of ``folder``, or None when there is no such folder."""

    def read(self, path: str) -> bytes:
        """The bytes of the regular file at ``path``."""

    def write(self, path: str, data: bytes, *, replace: bool) -> bool:
        """Write ``data`` to ``path`` (its folder made); False, untouched, if it exists and not ``replace``."""


class Room(Protocol):
    """The learners' homes of one room."""

    where: str
    at_once: int
    """How many learners' homes may be worked on at the same time."""

    def learners(self) -> list[str]:
        """Every learner of the room, sorted."""

    def home(self, learner: str) -> Iterator[Home]:
        """A context manager giving ``learner``'s home for the time of the work."""


def choose(room: Room, chosen: Sequence[str]) -> list[str]:
    """The room's learners, or only ``chosen`` (``--learner``); InvalidInput naming one the room lacks."""
    everyone = room.learners()
    missing = [name for name in chosen if name not in everyone]
    if missing:
        raise InvalidInput("--learner", f"{', '.join(map(repr, missing))} is not a learner of {room.where}",
                           hint=f"its learners: {', '.join(everyone) or 'none'}")
    return sorted(set(chosen)) if chosen else everyone


class Hub:
    """A JupyterHub at ``url`` (its public address, e.g. ``http://127.0.0.1:8000``), reached with ``token``."""

    def __init__(self, url: str, token: str, *, start_timeout: float = 120) -> None:
        if not token:
            raise ConfigError("--token: missing (an API token of the hub with the scopes "
                              f"{', '.join(NEEDED_SCOPES)}: set JUPYTERHUB_API_TOKEN or pass --token; an admin makes "
                              "one at /hub/token, or the hub's config gives a service one)")
        if not url.startswith(("http://", "https://")):
            raise InvalidInput("--hub", f"is {url!r}, not an http:// or https:// address",
                               hint="the hub's public address, the one learners open, e.g. http://127.0.0.1:8000")
        self.url = url.rstrip("/")
        self.where = f"the hub {self.url}"
        self.at_once = AT_ONCE
        self.token = token
        self.start_timeout = start_timeout
        owner = self.call("GET", "/hub/api/user")
        granted = set(owner.get("scopes", ()))
        lacking = [f"{scope} (to {why})" for scope, why in NEEDED_SCOPES.items() if scope not in granted]
        if lacking:
            raise ConfigError(f"--token: the token of {owner.get('name')!r} lacks the scopes {', '.join(lacking)} "
                              "(give it an admin's token, or a service's with admin:users, admin:servers and "
                              "access:servers)")

    def call(self, method: str, path: str, body: object = None, *, missing_ok: bool = False) -> Any:
        """One request to ``path`` on the hub's address; its JSON answer ({} when empty, None if 404 and ``missing_ok``)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            said = exc.read().decode(errors="replace")[:300]
            if exc.code in (401, 403):
                raise ConfigError(f"--token: the hub refused it for {method} {path} ({exc.code}: {said}); give an "
                                  f"admin's token, or one with the scopes {', '.join(NEEDED_SCOPES)}") from None
            raise BackendUnavailable(f"the hub answered {method} {path} with {exc.code}: {said}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendUnavailable(f"--hub: {self.url} is unreachable ({reason}); give the hub's public address, "
                                     "the one learners open, e.g. http://127.0.0.1:8000") from None
        return json.loads(raw) if raw.strip() else {}

    def user(self, learner: str) -> dict:
        return self.call("GET", f"/hub/api/users/{quote(learner, safe='')}")

    def learners(self) -> list[str]:
        """Every user of the hub who is not an admin, sorted."""
        return sorted(user["name"] for user in self.call("GET", "/hub/api/users") if not user.get("admin"))

    @contextmanager
    def home(self, learner: str) -> Iterator[Home]:
        server = self.user(learner)["servers"].get("")
        started = server is None
        if started:
            self.call("POST", f"/hub/api/users/{quote(learner, safe='')}/server", {})
        if not (server and server.get("ready")):
            server = self._ready(learner)
        try:
            yield ServerHome(self, server["url"])
        finally:
            if started:
                self._stop(learner)

    def _ready(self, learner: str) -> dict:
        """The learner's server once it is ready (it was started, by fleetlab or by the learner logging in)."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            server = self.user(learner)["servers"].get("")
            if server and server.get("ready"):
                return server
            if time.monotonic() > deadline:
                raise BackendUnavailable(f"{learner}'s server did not start within {self.start_timeout:.0f} s "
                                         "(--start-timeout; the hub's log says why)")
            time.sleep(POLL)  # a poll interval, bounded by the deadline

    def _stop(self, learner: str) -> None:
        self.call("DELETE", f"/hub/api/users/{quote(learner, safe='')}/server")
        deadline = time.monotonic() + self.start_timeout
        while self.user(learner)["servers"]:
            if time.monotonic() > deadline:
                raise BackendUnavailable(f"{learner}'s server did not stop within {self.start_timeout:.0f} s, "
                                         "after fleetlab started it: stop it from the hub's admin page")
            time.sleep(POLL)  # a poll interval, bounded by the deadline


class ServerHome:
    """A learner's home through their server's Contents API (``server``: its path on the hub, ``/user/<name>/``)."""

    def __init__(self, hub: Hub, server: str) -> None:
        self.hub, self.server = hub, server

    def _contents(self, path: str) -> str:
        return f"{self.server}api/contents/{quote(path)}"

    def list(self, folder: str) -> list[Entry] | None:
        model = self.hub.call("GET", self._contents(folder) + "?content=1", missing_ok=True)
        if model is None or model.get("type") != "directory":
            return None
        kinds = {"notebook": "file", "file": "file", "directory": "directory"}
        return sorted((Entry(item["name"], kinds.get(item["type"], "other")) for item in model["content"]),
                      key=lambda entry: entry.name)

    def read(self, path: str) -> bytes:
        model = self.hub.call("GET", self._contents(path) + "?type=file&format=base64&content=1")
        return base64.b64decode(model["content"])

    def write(self, path: str, data: bytes, *, replace: bool) -> bool:
        if not replace and self.hub.call("GET", self._contents(path) + "?content=0", missing_ok=True) is not None:
            return False
        folder = path.rpartition("/")[0]
        if folder and self.list(folder) is None:
            self.hub.call("PUT", self._contents(folder), {"type": "directory"})
        self.hub.call("PUT", self._contents(path), {
            "type": "file", "format": "base64", "content": base64.b64encode(data).decode()})
        return True


class HomeFolders:
    """The homes on this machine: ``template`` names one, ``{username}`` standing for the learner."""

    def __init__(self, template: str) -> None:
        if template.count("{username}") != 1:
            raise InvalidInput("--homes", f"is {template!r}: it needs {{username}} once",
                               hint="e.g. /home/jupyter-{username} on The Littlest JupyterHub")
        self.template = template
        self.where = f"the homes {template}"
        self.at_once = 1

    def learners(self) -> list[str]:
        head, tail = self.template.split("{username}")
        found = glob.glob(glob.escape(head) + "*" + glob.escape(tail))
        return sorted(path[len(head):len(path) - len(tail)] for path in found
                      if os.path.isdir(path) and not os.path.islink(path))

    @contextmanager
    def home(self, learner: str) -> Iterator[Home]:
        yield FolderHome(self.template.replace("{username}", learner))


class FolderHome:
    """One home folder, walked one folder at a time without following a link (a learner owns what is in it)."""

    def __init__(self, root: str) -> None:
        self.root = root

    @contextmanager
    def _folder(self, parts: Sequence[str], *, make: bool = False) -> Iterator[int]:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        descriptor = os.open(self.root, flags)
        owner = os.fstat(descriptor)
        try:
            for part in parts:
                if make:
                    try:
                        os.mkdir(part, dir_fd=descriptor)
                        self._give(part, descriptor, owner)
                    except FileExistsError:
                        pass
                inner = os.open(part, flags, dir_fd=descriptor)
                os.close(descriptor)
                descriptor = inner
            yield descriptor
        finally:
            os.close(descriptor)

    @staticmethod
    def _give(name: str, folder: int, owner: os.stat_result) -> None:
        if os.geteuid() == 0:  # a facilitator running as root: the learner keeps owning their home's files
            os.chown(name, owner.st_uid, owner.st_gid, dir_fd=folder, follow_symlinks=False)

    def list(self, folder: str) -> list[Entry] | None:
        try:
            with self._folder(folder.split("/")) as descriptor:
                names = os.listdir(descriptor)
                kinds = [os.stat(name, dir_fd=descriptor, follow_symlinks=False).st_mode for name in names]
        except (FileNotFoundError, NotADirectoryError, OSError):
            return None
        kind = {stat.S_IFREG: "file", stat.S_IFDIR: "directory"}
        return sorted((Entry(name, kind.get(stat.S_IFMT(mode), "other")) for name, mode in zip(names, kinds, strict=True)),
                      key=lambda entry: entry.name)

    def read(self, path: str) -> bytes:
        *folders, name = path.split("/")
        with self._folder(folders) as folder:
            descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
            with os.fdopen(descriptor, "rb") as file:
                if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                    raise OSError(f"{path} is not a regular file")
                data = file.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise OSError(f"{path} weighs over {MAX_FILE_BYTES // 2**20} MB")
        return data

    def write(self, path: str, data: bytes, *, replace: bool) -> bool:
        *folders, name = path.split("/")
        with self._folder(folders, make=True) as folder:
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_TRUNC if replace else os.O_EXCL)
            try:
                descriptor = os.open(name, flags, 0o600, dir_fd=folder)
            except FileExistsError:
                return False
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            self._give(name, folder, os.fstat(folder))
        return True

"""Objects that live in another process, reached through proxies over one socket (``Peer``).

The judge runs a learner's answer in a process of its own (``answerhost``)
and talks to it through a ``Peer`` at each end. What crosses is data: plain
values (numbers, text, bytes, lists, tuples, dicts, sets, datetimes,
fleetlab's frozen dataclasses and enums, exceptions) travel by value
(``codec``); any other object stays where it lives and the other side gets
a proxy (``proxies``). The side that holds the verdict reads with
``trusted=False``: a proxy of its objects reaches only their public
attributes and can set none.

Every call is part of a *chain*: the thread that starts it, and every call
made back while it waits, nested as on one stack. A call that comes back is
run by the thread waiting in its chain, so a harness's clock sees the thread
that called the learner's code (the virtual clock's actors rely on it); a
call in a new chain (a thread the learner started) gets a thread of its own.
A waiting thread wakes every ``WAIT_SLICE`` seconds, so an exception raised
in it (a case abandoned at its deadline) lands; the peer is then broken and
its process is stopped by its owner (``on_broken``).

Every message carries its sender's wall time. The side that trusts the
other (the answer's process) keeps its own wall time with the judge's
(``_WallTime``), so an answer that reads ``time.time()`` or
``datetime.now()`` itself sees a virtual clock's jumps, as it does in the
notebook, where the clock moves the kernel's own time.

Proxies are counted: when one is collected, the other side is told how many
times it had received the object, and forgets it once every copy it sent
is released. ``Peer.settle`` collects garbage on both sides until neither
has anything left to release (a check that watches for dropped timers).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import decimal
import enum
import gc
import io
import itertools
import numbers
import pickle
import queue
import socket
import struct
import threading
import time
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import time_machine
from botocore.exceptions import ClientError

from fleetlab.course.grading import elsewhere, learner
from fleetlab.course.grading.registry import StopAnswer
from fleetlab.course.judge import codec, proxies
from fleetlab.course.judge.codec import ORIGIN, RemoteError, RemoteFailed
from fleetlab.course.judge.proxies import SPECIAL_METHODS, Proxy

WAIT_SLICE = 0.05
MAX_MESSAGE = 64 * 1024 * 1024
TRANSIT = 0.5
_CALL_ARGUMENTS = {"call": (1, 2), "method": (2, 3)}


class RemoteStop(StopAnswer):
    """A harness's StopAnswer where the learner's code runs: it unwinds that code and goes back as the original."""


# --- one side of the connection -------------------------------------------------------------------------------


class Peer:
    """One end of a connection to another process (see the module docstring).

    ``trusted`` says whether the other side may be believed: the judge's end
    of an answer's process is not (``trusted=False``). ``operations`` adds
    requests the other side may make (name -> function of the decoded
    arguments). ``on_broken`` runs once when the connection breaks.
    """

    _ids = itertools.count(1)

    def __init__(self, sock: socket.socket, *, trusted: bool, name: str,
                 operations: Mapping[str, Callable[..., Any]] | None = None,
                 on_broken: Callable[[], None] | None = None, process: int | None = None) -> None:
        self.name, self.trusted, self.process = name, trusted, process
        self._sock = sock
        self._operations = {"getattr": self._getattr, "call": self._call, "method": self._method,
                            "api": self._api, "setattr": self._setattr, "collect": self._collect,
                            **(operations or {})}
        self._on_broken = on_broken
        self._send_lock = threading.Lock()
        self._state = threading.Lock()
        self._objects: dict[int, list[Any]] = {}  # id -> [object, copies sent]
        self._by_identity: dict[int, int] = {}  # id(object) -> id
        self._proxies: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._received: dict[int, int] = {}  # their id -> copies received, for the release
        self._released: collections.deque[tuple[int, int]] = collections.deque()
        self._inboxes: dict[str, queue.SimpleQueue[tuple[Any, ...]]] = {}
        self._local = threading.local()
        self._chains = itertools.count(1)
        self._token = next(Peer._ids)
        self.broken: str = ""
        self._wall_time = _WallTime() if trusted else None
        if not trusted:
            _answering_peers.add(self)

    # --- lifecycle

    def start(self) -> Peer:
        threading.Thread(target=self._read_forever, name=f"fleetlab-{self.name}-reader", daemon=True).start()
        return self

    def close(self) -> None:
        """Close the connection; every thread waiting on it raises RemoteFailed."""
        self._break("the connection was closed")
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    # --- asking the other side

    def request(self, operation: str, *args: Any) -> Any:
        """Ask the other side to run ``operation`` in this thread's chain; its value, or its exception raised here."""
        chain = getattr(self._local, "chain", None)
        outermost = chain is None
        if outermost:
            chain = f"{self.name}-{next(self._chains)}"
            self._local.chain = chain
            self._inboxes[chain] = queue.SimpleQueue()
        lent: list[Any] = []
        try:
            self._send(("req", chain, operation, self._encode_request(operation, args, lent)))
            ok, value = self._await_reply(self._inboxes[chain], lent)
        except Exception:
            raise
        except BaseException:  # abandoned mid-call (a case past its deadline): the other side is mid-call too
            self._break("a call was abandoned while the other process ran it")
            raise
        finally:
            if outermost:
                self._local.chain = None
                self._inboxes.pop(chain, None)
        if ok:
            return value
        raise value  # the call's own exception (a harness's StopAnswer too): the other side has finished it

    def settle(self, rounds: int = 4) -> None:
        """Release what this side dropped, let the other side collect and release what that freed, and so on,
        until neither has anything left to release (at most ``rounds``). Collect garbage here first when a
        reference cycle may hold a proxy: this collects here only after the other side released something."""
        for _ in range(rounds):
            theirs = self.request("collect", self._drain_released())
            self._forget(theirs)
            if not theirs and not self._released:
                return
            gc.collect()

    # --- the reader and the waiting threads

    def _read_forever(self) -> None:
        try:
            while True:
                message = self._receive()
                if self._wall_time is not None:  # before the waiting thread runs on: it reads the sender's time
                    self._wall_time.follow(message[-2])
                kind, chain = message[0], message[1]
                self._forget(message[-1])
                inbox = self._inboxes.get(chain)
                if inbox is not None:
                    inbox.put(message)
                elif kind == "req":
                    threading.Thread(target=self._serve, args=(message,), daemon=True,
                                     name=f"fleetlab-{self.name}-call").start()
        except BaseException as exc:
            self._break("it exited or was killed" if isinstance(exc, EOFError) else f"{type(exc).__name__}: {exc}")

    def _await_reply(self, inbox: queue.SimpleQueue[tuple[Any, ...]], lent: list[Any]) -> tuple[bool, Any]:
        """Serve the other side's calls in this chain until the reply comes: (True, its value) or (False, its
        exception). Raises RemoteFailed when the connection breaks or the reply is not the protocol's."""
        while True:
            try:
                message = inbox.get(timeout=WAIT_SLICE)
            except queue.Empty:
                if self.broken:
                    raise RemoteFailed(self.broken) from None
                continue
            if message[0] == "broken":
                raise RemoteFailed(self.broken)
            if message[0] == "req":
                self._serve(message)
                continue
            _, _, ok, payload, _, _ = message
            if not (type(payload) is list and len(payload) == 2 and type(payload[1]) is list):
                raise RemoteFailed("the other process sent a reply that is not this protocol's")
            self._take_back(lent, payload[1])
            value = self._decode(payload[0])
            if ok is True:
                return True, value
            if not isinstance(value, BaseException):
                raise RemoteFailed("the other process failed a call without saying why")
            return False, value

    def _serve(self, message: tuple[Any, ...]) -> None:
        """Run one request from the other side in this thread, in its chain, and send the reply."""
        _, chain, operation, payload, _, _ = message
        previous, borrowed = getattr(self._local, "chain", None), getattr(self._local, "borrowed", None)
        self._local.chain, self._local.borrowed = chain, []
        if previous is None:
            self._inboxes[chain] = queue.SimpleQueue()
        try:
            try:
                args = self._decode(payload)
                if operation not in self._operations:
                    raise RemoteFailed(f"{operation!r} is not an operation this side runs")
                ok, value = True, self._operations[operation](*args)
            except (Exception, StopAnswer) as exc:  # a harness's StopAnswer goes back to the learner's code, too
                ok, value = False, exc
            except BaseException as exc:  # SystemExit and the like: the learner's, where its code runs
                if not self.trusted:
                    self._break("a call was abandoned while it ran here")
                    raise
                ok, value = False, exc
            reply = ("rep", chain, ok, self._reply_payload(value, ok))
        finally:
            self._local.chain, self._local.borrowed = previous, borrowed
            if previous is None:  # before the reply: the chain's next call may come as soon as it is sent
                self._inboxes.pop(chain, None)
        self._send(reply)

    def _reply_payload(self, value: Any, ok: bool) -> list[Any]:
        """A reply's value and the lent containers it gives back; a value that cannot be sent becomes the error
        saying so (a caller never waits on a reply that failed to leave)."""
        try:
            return [self._encode(value), self._give_back(self._local.borrowed)]
        except Exception as exc:
            what = "returned" if ok else "raised"
            return [self._encode(ValueError(f"your code {what} something that cannot be sent to the grader ({exc})")),
                    []]

    # --- containers lent for a call: the callee's changes come back with its reply

    def _encode_request(self, operation: str, args: tuple[Any, ...], lent: list[Any]) -> list[Any]:
        """A request's arguments; those of the call it makes (a proxy's ``args`` and ``kwargs``) are lent."""
        positional, keywords = _CALL_ARGUMENTS.get(operation, (-1, -1))
        encoded: list[Any] = ["L"]
        for index, arg in enumerate(args):
            if index == positional:
                encoded.append(["L", *(self._encode_argument(item, lent) for item in arg)])
            elif index == keywords:
                encoded.append(["D", *(part for name, item in arg.items()
                                       for part in (self._encode(name), self._encode_argument(item, lent)))])
            else:
                encoded.append(self._encode(arg))
        return encoded

    def _encode_argument(self, value: Any, lent: list[Any]) -> Any:
        """An argument; a list, dict or set is lent (``["M", n, ...]``): what the callee does to it comes back."""
        if type(value) not in (list, dict, set):
            return self._encode(value)
        lent.append(value)
        return ["M", len(lent) - 1, self._encode(value)]

    def _give_back(self, borrowed: list[tuple[int, Any]]) -> list[Any]:
        return [[index, self._encode(value)] for index, value in borrowed]

    def _take_back(self, lent: list[Any], returned: list[Any]) -> None:
        """Apply the callee's changes to the containers lent for the call (same type only)."""
        for entry in returned:
            if not (type(entry) is list and len(entry) == 2 and type(entry[0]) is int and 0 <= entry[0] < len(lent)):
                raise RemoteFailed("the other process gave back a container it was not lent")
            original, changed = lent[entry[0]], self._decode(entry[1])
            if type(changed) is not type(original):
                continue
            if isinstance(original, list):
                original[:] = changed
            else:
                original.clear()
                original.update(changed)

    # --- what the other side may ask

    def _target(self, object_id: int) -> Any:
        with self._state:
            entry = self._objects.get(object_id)
        if entry is None:
            raise RemoteFailed(f"object {object_id} is not held here (released, or never sent)")
        return entry[0]

    def _getattr(self, object_id: int, name: str) -> Any:
        self._refuse_private(name)
        return _enter(getattr, self._target(object_id), name)

    def _setattr(self, object_id: int, name: str, value: Any) -> None:
        if not self.trusted:
            raise AttributeError(f"cannot set {name!r}: the grader's objects are read-only to your code")
        _enter(setattr, self._target(object_id), name, value)

    def _call(self, object_id: int, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return _enter(self._target(object_id), *args, **kwargs)

    def _method(self, object_id: int, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if name not in SPECIAL_METHODS:
            self._refuse_private(name)
        return _enter(getattr(self._target(object_id), name), *args, **kwargs)

    def _api(self, client_id: int, operation: str, params: dict[str, Any]) -> Any:
        client = self._target(client_id)
        methods = {api: method for method, api in client.meta.method_to_api_mapping.items()}
        if operation not in methods:
            raise AttributeError(f"{client.meta.service_model.service_name} has no operation {operation!r}")
        return getattr(client, methods[operation])(**params)

    def _collect(self, released: list[list[int]]) -> list[tuple[int, int]]:
        self._forget(released)
        gc.collect()
        return self._drain_released()

    def _refuse_private(self, name: str) -> None:
        if not self.trusted and name.startswith("_"):
            raise AttributeError(f"{name!r} is private to the grader's object; your code can use its public names")

    # --- the wire

    def _send(self, message: tuple[Any, ...]) -> None:
        with self._send_lock:
            data = pickle.dumps((*message, time.time(), self._drain_released()), protocol=pickle.HIGHEST_PROTOCOL)
            try:
                self._sock.sendall(struct.pack("!Q", len(data)) + data)
            except OSError as exc:
                self._break(f"the other process is gone ({exc})")
                raise RemoteFailed(self.broken) from None

    def _receive(self) -> tuple[Any, ...]:
        (size,) = struct.unpack("!Q", self._read_exactly(8))
        if size > MAX_MESSAGE:
            raise RemoteFailed(f"the other process sent {size} bytes at once; at most {MAX_MESSAGE} are read")
        message = codec.DataOnly(io.BytesIO(self._read_exactly(size))).load()
        if not (isinstance(message, tuple) and len(message) == 6 and message[0] in ("req", "rep")
                and isinstance(message[1], str) and type(message[4]) is float):
            raise RemoteFailed("the other process sent a message that is not this protocol's")
        return message

    def _read_exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self._sock.recv(min(left, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _break(self, why: str) -> None:
        with self._state:
            if self.broken:
                return
            self.broken = why
            inboxes = list(self._inboxes.values())
        for inbox in inboxes:
            inbox.put(("broken",))
        if self._on_broken is not None:
            self._on_broken()

    # --- holding objects for the other side, and releasing theirs

    def _keep(self, value: Any) -> int:
        with self._state:
            object_id = self._by_identity.get(id(value))
            if object_id is None or self._objects[object_id][0] is not value:
                object_id = next(_object_ids)
                self._objects[object_id] = [value, 0]
                self._by_identity[id(value)] = object_id
            self._objects[object_id][1] += 1
            return object_id

    def _forget(self, released: Any) -> None:
        """Drop what the other side released: ``[(id, copies), ...]`` (ignored when not that shape)."""
        if not isinstance(released, (list, tuple)):
            return
        dropped = []
        with self._state:
            for entry in released:
                if not (isinstance(entry, (list, tuple)) and len(entry) == 2
                        and all(type(part) is int for part in entry)):
                    continue
                object_id, copies = entry
                held = self._objects.get(object_id)
                if held is None:
                    continue
                held[1] -= copies
                if held[1] <= 0:
                    del self._objects[object_id]
                    self._by_identity.pop(id(held[0]), None)
                    dropped.append(held)
        del dropped  # the objects go here, outside the lock (their __del__ may call back)

    def _drain_released(self) -> list[tuple[int, int]]:
        drained = []
        while self._released:
            drained.append(self._released.popleft())
        return drained

    def _release(self, their_id: int) -> None:
        """A proxy was collected: tell the other side how many copies of its object this side received."""
        copies = self._received.pop(their_id, 0)
        if copies and not self.broken:
            self._released.append((their_id, copies))

    # --- values out

    def _encode(self, value: Any, depth: int = 0) -> Any:
        if depth > codec.MAX_DEPTH:
            raise ValueError(f"a value nested more than {codec.MAX_DEPTH} levels deep cannot be sent")
        kind = type(value)
        if kind in codec.PLAIN:
            return value
        down = depth + 1
        if kind is list:
            return ["L", *(self._encode(item, down) for item in value)]
        if kind is tuple:
            return ["T", *(self._encode(item, down) for item in value)]
        if kind is dict:
            return ["D", *(self._encode(part, down) for pair in value.items() for part in pair)]
        if kind in (set, frozenset):
            return ["S" if kind is set else "F", *(self._encode(item, down) for item in value)]
        if kind in (datetime.datetime, datetime.date, datetime.timedelta, decimal.Decimal):
            return codec.encode_time_or_decimal(value)
        if isinstance(value, tuple) and hasattr(kind, "_fields") and codec.in_fleetlab(kind):
            return ["NT", codec.class_path(kind), *(self._encode(item, down) for item in value)]
        if isinstance(value, (list, tuple, dict, set, frozenset)) and not codec.library_value(kind):
            return self._encode(codec.base_container(value), depth)  # a Counter as a dict, a namedtuple as a tuple
        if kind is types.TracebackType:
            return None  # a traceback stays where it was made (an __exit__ gets None for it)
        if isinstance(value, type) and issubclass(value, BaseException):
            return ["EC", value.__module__, value.__qualname__]
        origin = self._origin(value)
        if origin is not None and isinstance(value, BaseException):
            return ["BE", origin, self._learner_frames(value)]  # back home, with the learner's frames it went through
        if origin is not None:
            return ["B", origin]
        if isinstance(value, numbers.Number) and not isinstance(value, (enum.Enum, decimal.Decimal)):
            number = codec.plain_number(value)
            if number is not None:
                return number
        if isinstance(value, BaseException):
            return self._encode_exception(value, down)
        if codec.library_enum(kind):
            return ["EN", codec.class_path(kind), value.name]
        if codec.library_value(kind):
            fields = [part for field in dataclasses.fields(value) if field.init
                      for part in (field.name, self._encode(getattr(value, field.name), down))]
            return ["DC", codec.class_path(kind), *fields]
        if self.trusted is False and proxies.is_client(value):
            meta = value.meta
            return ["C", self._keep(value), meta.service_model.service_name, meta.region_name]
        name = getattr(value, "__qualname__", None) if callable(value) else None
        return ["R", self._keep(value), kind.__name__, proxies.special_methods(kind), callable(value),
                name if isinstance(name, str) else ""]

    def _encode_exception(self, error: BaseException, depth: int) -> list[Any]:
        if isinstance(error, ClientError):
            return ["CE", self._keep(error), self._encode(error.response, depth), error.operation_name]
        try:
            args = self._encode(list(error.args), depth)
        except ValueError:
            args = ["L", str(error)]
        frames = self._learner_frames(error)
        attributes = {name: value for name, value in vars(error).items() if not name.startswith("__fleetlab")}
        try:
            state = self._encode(attributes, depth)
        except ValueError:
            state = ["D"]
        return ["E", self._keep(error), type(error).__module__, type(error).__qualname__, args, str(error),
                frames, self.trusted and learner.raised_by_learner_stub(error, callers=_ENTRIES), state,
                isinstance(error, StopAnswer)]

    def _learner_frames(self, error: BaseException) -> list[list[Any]]:
        """The learner's frames of ``error`` on this side, as the protocol carries them: on the side that runs the
        answer, those from where the other side's call entered it on (whatever files they name); none on the
        judge's side, where no learner code runs."""
        if not self.trusted:
            return []
        return [[frame.filename, frame.lineno, frame.name, frame.line or ""]
                for frame in learner.learner_frames(error, callers=_ENTRIES)]

    # --- values in

    def _decode(self, value: Any, depth: int = 0) -> Any:
        if depth > codec.MAX_DEPTH:
            raise RemoteFailed("the other process sent a value nested too deeply")
        if type(value) in codec.PLAIN:
            return value
        if type(value) is not list or not value or not isinstance(value[0], str):
            raise RemoteFailed(f"the other process sent a value that is not this protocol's ({type(value).__name__})")
        tag, parts, down = value[0], value[1:], depth + 1
        if tag in ("L", "T", "S", "F"):
            items = [self._decode(part, down) for part in parts]
            return {"L": list, "T": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "D":
            items = [self._decode(part, down) for part in parts]
            return dict(zip(items[::2], items[1::2]))
        if tag in codec.TIME_TAGS:
            return codec.TIME_TAGS[tag](*parts)
        if tag == "M":
            value = self._decode(parts[1], down)
            borrowed = getattr(self._local, "borrowed", None)
            if borrowed is not None and type(parts[0]) is int:
                borrowed.append((parts[0], value))
            return value
        if tag == "B":
            return self._target(codec.whole(parts[0]))
        if tag == "BE":
            return self._returned_exception(codec.whole(parts[0]), parts[1])
        if tag == "R":
            return self._proxy(codec.whole(parts[0]), str(parts[1]), tuple(map(str, parts[2])), bool(parts[3]),
                               str(parts[4]))
        if tag == "C" and self.trusted:
            return self._client(codec.whole(parts[0]), str(parts[1]), str(parts[2]))
        if tag == "CE":
            error = ClientError(self._decode(parts[1], down), str(parts[2]))
            return self._mark(error, codec.whole(parts[0]))
        if tag == "E":
            return self._rebuild_exception(parts, down)
        if tag == "EC":
            return codec.exception_class(str(parts[0]), str(parts[1]))
        if tag == "EN":
            return codec.library_class(parts[0], enum.Enum)[str(parts[1])]
        if tag == "NT":
            cls = codec.library_class(parts[0], tuple)
            if not hasattr(cls, "_fields"):
                raise RemoteFailed(f"{parts[0]} is not one of fleetlab's named tuples")
            return cls(*(self._decode(part, down) for part in parts[1:]))
        if tag == "DC":
            cls = codec.library_class(parts[0], None)
            if not codec.library_value(cls):
                raise RemoteFailed(f"{parts[0]} is not one of fleetlab's frozen dataclasses")
            fields = [self._decode(part, down) for part in parts[1:]]
            return cls(**dict(zip(fields[::2], fields[1::2])))
        raise RemoteFailed(f"the other process sent a value tagged {tag!r}, which this side does not read")

    def _rebuild_exception(self, parts: list[Any], depth: int) -> BaseException:
        object_id, module, qualname, args, message, frames, stub, state, stop = parts
        args = self._decode(args, depth)
        if stop is True and self.trusted:  # the judge's harness stopping the learner's code: unwind it
            return self._mark(RemoteStop(str(message)), codec.whole(object_id))
        error = codec.exception_of(str(module), str(qualname), args if isinstance(args, list) else [], str(message))
        attributes = self._decode(state, depth)
        if isinstance(attributes, dict) and not isinstance(error, RemoteError):
            error.__dict__.update({name: value for name, value in attributes.items()
                                   if isinstance(name, str) and not name.startswith("__")})
        error.__dict__[learner.REMOTE_FRAMES] = codec.frame_summaries(frames)
        error.__dict__[learner.REMOTE_STUB] = bool(stub)
        return self._mark(error, codec.whole(object_id))

    def _returned_exception(self, object_id: int, frames: Any) -> BaseException:
        """An exception of this side's, back from the other: raised here (a ParamValidationError of the learner's
        API call), it went through the learner's code there, so it carries the learner's frames it passed."""
        error = self._target(object_id)
        if not isinstance(error, BaseException):
            raise RemoteFailed(f"object {object_id} is not an exception")
        passed = codec.frame_summaries(frames)
        if passed:
            error.__dict__[learner.REMOTE_FRAMES] = passed
        return error

    def _mark(self, value: Any, their_id: int) -> Any:
        """Remember that ``value`` stands for the other side's object ``their_id``: sent back, it is theirs again
        (the other side keeps an exception it sent for as long as the connection lasts)."""
        value.__dict__[ORIGIN] = (self._token, their_id)
        return value

    def _origin(self, value: Any) -> int | None:
        """The other side's id for ``value`` when it stands for an object of theirs (a proxy, a client or an
        exception this peer made), else None."""
        if isinstance(value, Proxy):
            return value._fleetlab_id if value._fleetlab_peer is self else None
        mark = getattr(value, "__dict__", {}).get(ORIGIN)
        return mark[1] if isinstance(mark, tuple) and mark[0] == self._token else None

    def _proxy(self, their_id: int, type_name: str, special: tuple[str, ...], is_callable: bool,
               qualname: str) -> Any:
        return self._stand_in(their_id, lambda: proxies.proxy_class(type_name, special, is_callable)(self, their_id, qualname))

    def _client(self, their_id: int, service: str, region: str) -> Any:
        def make() -> Any:
            client = proxies.answering_client(service, region,
                                       lambda operation, params: self.request("api", their_id, operation, params))
            return self._mark(client, their_id)

        return self._stand_in(their_id, make)

    def _stand_in(self, their_id: int, make: Callable[[], Any]) -> Any:
        """The one object here that stands for the other side's ``their_id`` (made now if there is none); when
        it is collected, the other side is told every copy this side received."""
        self._received[their_id] = self._received.get(their_id, 0) + 1
        existing = self._proxies.get(their_id)
        if existing is not None:
            return existing
        made = make()
        self._proxies[their_id] = made
        weakref.finalize(made, self._release, their_id)
        return made


_answering_peers: weakref.WeakSet[Peer] = weakref.WeakSet()


class _WallTime:
    """This process's wall time, kept with another's: moved (time-machine) to a sender's time that a virtual
    clock moved, and real again once the sender's is. Only the reader thread calls ``follow``."""

    def __init__(self) -> None:
        self._travel: Any = None  # time-machine's travel while this process's time is moved
        self._coordinates: Any = None  # and where it has moved it

    def follow(self, theirs: float) -> None:
        """Read ``theirs`` (the sender's ``time.time()`` as it sent a message) as the time now."""
        if abs(theirs - _real_time()) <= TRANSIT:
            self._stop()
            return
        gap = theirs - time.time()
        if self._travel is None:
            self._travel = time_machine.travel(theirs, tick=True)
            self._coordinates = self._travel.start()
        elif gap > 0.001 or gap < -TRANSIT:  # their clock jumped ahead, or was taken back
            self._coordinates.move_to(theirs)

    def _stop(self) -> None:
        if self._travel is not None:
            self._travel.stop()
            self._travel = self._coordinates = None


def _real_time() -> float:
    hatch = time_machine.escape_hatch
    return hatch.time.time() if hatch.is_travelling() else time.time()


def settle_everywhere() -> None:
    """``Peer.settle`` every live peer of this process whose other side runs a learner's code."""
    for peer in list(_answering_peers):
        if not peer.broken:
            with contextlib.suppress(RemoteFailed):
                peer.settle()


_object_ids = itertools.count(1)
elsewhere.SETTLERS.append(settle_everywhere)


def _enter(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``: where the other side's call enters an object of this side's (on the answer's
    side, the answer's own code: an exception raised from here on is the learner's)."""
    return function(*args, **kwargs)


_ENTRIES = frozenset({_enter.__code__})

"""Proxies: what the other side gets for an object that stays where it lives (``Peer`` makes them).

A proxy's calls, attribute reads and special methods (``with``, iteration,
``len``) go back to the object. A boto3 client travels as a real client of
the same service whose API calls come back to the original (operation
"api"), so the learner's code catches boto3's own exceptions and pages with
its paginators.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.course.grading.elsewhere import Elsewhere
from fleetlab.course.judge.codec import ORIGIN

SPECIAL_METHODS = ("__enter__", "__exit__", "__iter__", "__next__", "__len__", "__getitem__", "__contains__",
                   "__bool__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__float__", "__int__",
                   "__index__", "__str__", "__repr__")


# --- proxies ----------------------------------------------------------------------------------------------------


class Proxy(Elsewhere):
    """Stands for an object in the other process: its public attributes and calls go there."""

    __slots__ = ("_fleetlab_peer", "_fleetlab_id", "_fleetlab_name", "__weakref__")

    def __init__(self, peer: Any, their_id: int, qualname: str = "") -> None:  # a peer.Peer
        object.__setattr__(self, "_fleetlab_peer", peer)
        object.__setattr__(self, "_fleetlab_id", their_id)
        object.__setattr__(self, "_fleetlab_name", qualname)

    def __getattr__(self, name: str) -> Any:
        if name in ("__qualname__", "__name__") and self._fleetlab_name:
            return self._fleetlab_name if name == "__qualname__" else self._fleetlab_name.rpartition(".")[2]
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._fleetlab_peer.request("getattr", self._fleetlab_id, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._fleetlab_peer.request("setattr", self._fleetlab_id, name, value)

    def _fleetlab_process(self) -> int | None:
        return self._fleetlab_peer.process


def _forwarding(name: str) -> Callable[..., Any]:
    def forward(self: Proxy, *args: Any) -> Any:
        return self._fleetlab_peer.request("method", self._fleetlab_id, name, list(args), {})

    forward.__name__ = name
    return forward


def _calling(self: Proxy, *args: Any, **kwargs: Any) -> Any:
    return self._fleetlab_peer.request("call", self._fleetlab_id, list(args), kwargs)


_proxy_classes: dict[tuple[str, tuple[str, ...], bool], type[Proxy]] = {}


def proxy_class(type_name: str, special: tuple[str, ...], is_callable: bool) -> type[Proxy]:
    key = (type_name, special, is_callable)
    cls = _proxy_classes.get(key)
    if cls is None:
        members: dict[str, Any] = {name: _forwarding(name) for name in special if name in SPECIAL_METHODS}
        if "__eq__" in members:
            members["__hash__"] = lambda self: hash((self._fleetlab_peer.name, self._fleetlab_id))
        if is_callable:
            members["__call__"] = _calling
        members["__slots__"] = ()
        cls = type(type_name if type_name.isidentifier() else "Remote", (Proxy,), members)
        _proxy_classes[key] = cls
    return cls


_session_lock = threading.Lock()
_session: Any = None


def answering_client(service: str, region: str, answer: Callable[[str, dict[str, Any]], Any]) -> Any:
    """A real botocore client of ``service`` whose every API call is ``answer(operation, params)``: it validates
    nothing itself and reaches no endpoint, and raises the service's modelled exceptions for what comes back."""
    global _session
    import botocore.session

    with _session_lock:
        if _session is None:
            _session = botocore.session.get_session()
        client = _session.create_client(service, region_name=region or "us-east-1",
                                        endpoint_url="http://fleetlab-judge.invalid",
                                        aws_access_key_id="graded", aws_secret_access_key="graded")

    def make_api_call(operation: str, params: dict[str, Any]) -> Any:
        try:
            return answer(operation, params)
        except ClientError as error:
            details = error.response.get("Error", {})
            code = details.get("QueryErrorCode") or details.get("Code", "")  # as botocore picks the class
            modelled = client.exceptions.from_code(code)
            if modelled is type(error):
                raise
            raised = modelled(error.response, error.operation_name)
            if ORIGIN in vars(error):  # raised back unchanged, it is the harness's own exception again
                raised.__dict__[ORIGIN] = vars(error)[ORIGIN]
            raise raised from None

    client._make_api_call = make_api_call
    return client


CLIENT_SERVICES = ("sqs", "dynamodb", "stepfunctions", "events")
"""The services whose clients the checks' harnesses hand to answers."""


def warm_clients() -> None:
    """Load each of ``CLIENT_SERVICES``' models into the shared botocore session now (a process forked later
    starts with them)."""
    for service in CLIENT_SERVICES:
        answering_client(service, "us-east-1", lambda *_: {})



def special_methods(cls: type) -> list[str]:
    return [name for name in SPECIAL_METHODS
            if getattr(cls, name, None) is not None and getattr(cls, name, None) is not getattr(object, name, None)]


def is_client(value: Any) -> bool:
    """A boto3 client, or a harness's stand-in for one (its ``meta`` is a client's)."""
    from botocore.client import ClientMeta

    try:
        return isinstance(getattr(value, "meta", None), ClientMeta)
    except Exception:  # an object whose attribute lookup fails is no client
        return False

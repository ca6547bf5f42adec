"""Select and build the backend: where the boto3 clients point, and which clock runs.

Four backends share one code path through boto3; a backend only decides the
endpoint, the credentials and the clock:

========== ===================================================== =============
name       what it is                                            clock
========== ===================================================== =============
moto       moto in this process (``mock_aws``), SFN execution on virtual
moto-server moto's ThreadedMotoServer on 127.0.0.1, a free port  virtual
localstack a LocalStack at ``LOCALSTACK_ENDPOINT``               scaled
aws        a real account; needs ``FLEETLAB_ALLOW_REAL_AWS=1``   scaled
========== ===================================================== =============

moto's server runs in this process, so time-machine moves it too and it gets
the virtual clock like in-process moto. LocalStack and AWS keep their own
time: their clock is ``timescale.ScaledClock`` (lab time x``FLEETLAB_TIME_SCALE``,
default 60), and every client they hand out converts the durations the
services enforce (``servicetime``). While a moto backend is open, the pure
functions moto calls again and again with the same arguments (its
EventBridge's JSONPath parse, above all) are memoised (``motocache``): the
same answers for about a third less CPU time on a chaos day; and moto's
Step Functions interpreter is imported only when a call needs it (``lazysfn``). In-process
moto's clients of the services a fleet calls on every step do not sign
their requests (``UNSIGNED_SERVICES``): moto checks no signature.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.config
import botocore.loaders
import botocore.session

from fleetlab.backends import lazysfn, motocache, servicetime
from fleetlab.core.clock import Clock, RealClock, VirtualClock
from fleetlab.core.errors import BackendUnavailable, ConfigError, LabClosed, RealAwsRefused
from fleetlab.core.settings import BACKEND_NAMES, SERVED_APART, settings
from fleetlab.core.timescale import ScaledClock
from fleetlab.core.versions import package_version

DEFAULT_REGION = "us-east-1"
_FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
_SFN_EXECUTION = {"stepfunctions": {"execute_state_machine": True}}
UNSIGNED_SERVICES = frozenset({"sqs", "dynamodb", "events"})  # a fleet's calls on every step; in-process moto only


@dataclass
class _Lifetime:
    """Whether a backend (and any view of it) is closed."""

    closed: bool = False

    def refuse_call(self, model: Any, **_: Any) -> None:
        """A client's ``provide-client-params`` hook, the first event of every call: LabClosed once closed."""
        if self.closed:
            raise LabClosed(f"{model.service_model.service_name}.{model.name} was not sent")


@dataclass(frozen=True)
class _RefusingOnceClosed:
    """A backend's ``make_client``: each client it makes refuses every call once the backend is closed."""

    make: Callable[[str, botocore.config.Config], Any]
    lifetime: _Lifetime

    def __call__(self, service: str, config: botocore.config.Config) -> Any:
        if self.lifetime.closed:
            raise LabClosed(f"no new {service} client is made")
        client = self.make(service, config)
        client.meta.events.register("provide-client-params", self.lifetime.refuse_call)
        return client


@dataclass
class Backend:
    """An open backend: boto3 clients, a clock, and how to shut it down.

    ``client(service)`` returns one cached client per service (retries on);
    ``unretried_client(service)`` one that makes a single attempt, for calls
    a backend may not implement. On a scaled clock both convert lab time to
    the service's time and back (``servicetime``). ``receive_lock`` serialises
    receives on one queue where the backend needs it (moto's ReceiveMessage
    does not lock, so concurrent receivers can get duplicates that AWS would
    never hand out within a visibility window).

    Once the backend is closed, every client it made refuses every call with
    LabClosed before anything is sent: a moto lab's client would otherwise
    reach AWS's real endpoints, its mock gone.
    """

    name: str
    region: str
    clock: Clock
    make_client: Callable[[str, botocore.config.Config], Any]
    endpoint: str | None = None
    serialise_receives: bool = False
    details: dict[str, str] = field(default_factory=dict)
    _closers: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    _clients: dict[tuple[str, bool], Any] = field(default_factory=dict, repr=False)
    _locks: dict[str, threading.Lock] = field(default_factory=dict, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _lifetime: _Lifetime = field(default_factory=_Lifetime, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.make_client, _RefusingOnceClosed):
            self.make_client = _RefusingOnceClosed(self.make_client, self._lifetime)

    @property
    def closed(self) -> bool:
        return self._lifetime.closed

    def client(self, service: str) -> Any:
        """The boto3 client for ``service`` on this backend (cached), retrying throttles and 5xx."""
        return self._client(service, retried=True)

    def unretried_client(self, service: str) -> Any:
        """A client for ``service`` that makes one attempt: an unimplemented call fails once, quietly."""
        return self._client(service, retried=False)

    @contextlib.contextmanager
    def receive_lock(self, queue_url: str) -> Iterator[None]:
        """Hold the per-queue receive lock when this backend needs one."""
        if not self.serialise_receives:
            yield
            return
        with self._guard:
            lock = self._locks.setdefault(queue_url, threading.Lock())
        with lock:
            yield

    @property
    def account_id(self) -> str:
        return self.client("sts").get_caller_identity()["Account"]

    @property
    def is_emulated(self) -> bool:
        return self.name != "aws"

    @property
    def outlives_process(self) -> bool:
        """True when what this process makes survives it (LocalStack, AWS): a dead kernel leaves it behind."""
        return self.name in ("localstack", "aws")

    @property
    def receive_wait(self) -> int:
        """WaitTimeSeconds a worker's receive uses (lab seconds): 0 where delivery is synchronous (moto),
        one second of service time where it is not (EventBridge delivers after PutEvents returns, and a
        redelivered message turns up late)."""
        return 0 if self.clock.virtual else min(20, self.clock.scale)

    def at_service_time(self) -> Backend:
        """This backend as the services see it: plain real time, clients that convert nothing.

        For measuring the services themselves (the fidelity probes). The
        view shares the endpoints and whether the backend is closed (its
        clients refuse calls once it is), never the clients or what closing
        stops; on a virtual clock it is the backend itself.
        """
        if not isinstance(self.clock, ScaledClock):
            return self
        return Backend(name=self.name, region=self.region, clock=RealClock(), make_client=self.make_client,
                       endpoint=self.endpoint, serialise_receives=self.serialise_receives, details=self.details,
                       _lifetime=self._lifetime)

    def close(self) -> None:
        """Stop what the backend started (server, mock, clock), newest first. Idempotent."""
        if self.closed:
            return
        self._lifetime.closed = True
        self._closers.close()

    def _client(self, service: str, *, retried: bool) -> Any:
        with self._guard:
            if (service, retried) not in self._clients:
                config = _retry_config() if retried else _retry_config(attempts=1)
                client = self.make_client(service, config)
                if isinstance(self.clock, ScaledClock):
                    servicetime.install(client, self.clock)
                self._clients[(service, retried)] = client
            return self._clients[(service, retried)]


def open_backend(name: str | None = None) -> Backend:
    """Open the backend named ``name``, or ``$FLEETLAB_BACKEND``, or ``moto``.

    Raises ConfigError for an unknown name (or any setting not allowed),
    RealAwsRefused for ``aws`` without the opt-in, BackendUnavailable when an
    emulator cannot be reached.
    """
    chosen = chosen_backend(name)
    openers = {
        "moto": _open_moto,
        "moto-server": _open_moto_server,
        "localstack": _open_localstack,
        "aws": _open_aws,
    }
    if chosen not in openers:
        raise ConfigError(f"backend {chosen!r} is not a backend; choose one of {', '.join(BACKEND_NAMES)}")
    return openers[chosen]()


def chosen_backend(name: str | None = None) -> str:
    """The backend ``open_backend(name)`` would open: ``name``, or ``$FLEETLAB_BACKEND``, or ``moto``."""
    return (name or settings().backend).strip().lower()


REAL_AWS_OPT_IN = "FLEETLAB_ALLOW_REAL_AWS"


def real_aws_allowed() -> bool:
    """True when the learner opted in to real AWS (``FLEETLAB_ALLOW_REAL_AWS=1``)."""
    return settings().allow_real_aws


def real_aws_refused(before: str = "") -> RealAwsRefused:
    """The refusal to use real AWS without the opt-in; ``before`` (e.g. a cost estimate) opens the message."""
    refusal = (
        "FLEETLAB_BACKEND=aws creates billable resources in a real AWS account. "
        f"Set {REAL_AWS_OPT_IN}=1 to opt in, or unset FLEETLAB_BACKEND to use moto."
    )
    return RealAwsRefused(f"{before}\n{refusal}" if before else refusal)


def _retry_config(attempts: int = 5) -> botocore.config.Config:
    """Standard retries: ``attempts`` tries in all (by default the first and four retries)."""
    return botocore.config.Config(
        retries={"total_max_attempts": attempts, "mode": "standard"},
        connect_timeout=5,
        read_timeout=70,
    )


def _quiet_moto_logs() -> None:
    # A failed state logs a large dump per state; the history API tells the same story.
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)


class _DropServerTraceback(logging.Filter):
    """Drops the traceback moto's server logs after answering an unimplemented ``action``."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action

    def filter(self, record: logging.LogRecord) -> bool:
        return f"The {self.action} action has not been implemented" not in record.getMessage()


def mute_server_traceback(action: str) -> None:
    """Keep an unimplemented call from printing a server traceback (moto-server logs it after the reply)."""
    logger = logging.getLogger("werkzeug")
    if not any(isinstance(f, _DropServerTraceback) and f.action == action for f in logger.filters):
        logger.addFilter(_DropServerTraceback(action))


def _open_moto() -> Backend:
    """In-process moto. If a step fails, what was already started is stopped again.

    moto's repeated pure work is memoised while it is open (``motocache``).
    """
    from moto import mock_aws

    _quiet_moto_logs()
    with contextlib.ExitStack() as started:
        started.callback(motocache.install())
        started.callback(lazysfn.install())
        mock = mock_aws(config=_SFN_EXECUTION)
        mock.start()
        started.callback(mock.stop)
        return _moto_backend("moto", None, "moto (in-process)", started)


def _open_moto_server() -> Backend:
    """moto's threaded server on a free loopback port. If a step fails, what was already started is undone.

    The server runs in this process, so ``motocache`` memoises its repeated pure work too.
    """
    from moto.server import ThreadedMotoServer

    _quiet_moto_logs()
    with contextlib.ExitStack() as started:
        started.callback(motocache.install())
        started.callback(lazysfn.install())
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        started.callback(server.stop)
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # Step Functions tasks call back into the server; they find it through MOTO_PORT.
        started.enter_context(_environment("MOTO_PORT", str(port)))
        _post_json(f"{endpoint}/moto-api/config", _SFN_EXECUTION)
        started.callback(_post_json, f"{endpoint}/moto-api/reset", {})
        return _moto_backend("moto-server", endpoint, f"moto server at {endpoint}", started)


def _moto_backend(name: str, endpoint: str | None, emulator: str, started: contextlib.ExitStack) -> Backend:
    """Start the virtual clock last (it is what fails when another backend is open) and hand over ``started``.

    In-process moto (no ``endpoint``) gets clients of ``UNSIGNED_SERVICES`` that do not sign their requests.
    """
    clock = VirtualClock()
    started.callback(clock.close)
    session = _session(region_name=DEFAULT_REGION, **_FAKE_CREDENTIALS)

    def make_client(service: str, config: botocore.config.Config) -> Any:
        client = session.client(service, endpoint_url=endpoint, config=config)
        return _unsigned(client) if endpoint is None and service in UNSIGNED_SERVICES else client

    return Backend(
        name=name,
        region=DEFAULT_REGION,
        clock=clock,
        endpoint=endpoint,
        make_client=make_client,
        serialise_receives=True,
        details={"emulator": emulator, "version": package_version("moto")},
        _closers=started.pop_all(),
    )


_SERVICE_MODELS = botocore.loaders.create_loader()
"""One loader of botocore's service models for every session a backend makes: each model file is read once
per process, not once per backend (a backend's clients cost a fifth of what they did with a loader each)."""


def _session(**options: Any) -> boto3.Session:
    """A boto3 session (``options`` as ``boto3.Session``'s) that shares this process's service models."""
    core = botocore.session.Session()
    core.register_component("data_loader", _SERVICE_MODELS)
    return boto3.Session(botocore_session=core, **options)


def _unsigned(client: Any) -> Any:
    """``client`` with its requests left unsigned: pure waste in-process (issue 30, about a tenth of a call's CPU time).

    For ``UNSIGNED_SERVICES`` in-process moto checks no signature; it reads
    the region from the endpoint's host (``DEFAULT_REGION``) and the account
    from the access key, else a stand-in one (the default account either
    way). Not S3: moto answers an unsigned request as an anonymous caller's.
    """
    service_id = client.meta.service_model.service_id.hyphenize()
    client.meta.events.unregister(f"request-created.{service_id}", client._request_signer.handler)
    return client


@contextlib.contextmanager
def _environment(variable: str, value: str) -> Iterator[None]:
    """Set ``variable`` for as long as the block (the backend) lives, then restore what was there."""
    previous = os.environ.get(variable)
    os.environ[variable] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = previous


def _open_localstack() -> Backend:
    from localstack_client.session import Session as LocalstackSession

    chosen = settings()
    endpoint = chosen.localstack_endpoint
    _require_reachable(
        f"{endpoint}/_localstack/health",
        "LocalStack",
        "start it with `make localstack-up` (no Docker; export what it prints) or `docker compose up localstack moto` "
        "(its LocalStack image stops at once without LOCALSTACK_AUTH_TOKEN), or point LOCALSTACK_ENDPOINT at it; "
        "see docs/troubleshooting.md#localstack-not-reachable-or-asking-for-a-token",
    )
    apart = chosen.served_apart
    for service, url in apart.items():
        _require_reachable(url, f"the {service} endpoint", f"check {SERVED_APART[service]}")
    host = endpoint.split("://", 1)[-1]
    session = LocalstackSession(localstack_host=host, region_name=DEFAULT_REGION)
    plain = _session(region_name=DEFAULT_REGION, **_FAKE_CREDENTIALS)

    def make_client(service: str, config: botocore.config.Config) -> Any:
        if service in apart:
            return plain.client(service, endpoint_url=apart[service], config=config)
        return session.client(service, config=config)

    return Backend(
        name="localstack",
        region=DEFAULT_REGION,
        clock=ScaledClock(chosen.time_scale),
        endpoint=endpoint,
        make_client=make_client,
        details={
            "emulator": f"LocalStack at {endpoint}",
            **{f"{service} endpoint": url for service, url in apart.items()},
            "version": _localstack_version(endpoint),
        },
    )


def _open_aws() -> Backend:
    if not real_aws_allowed():
        raise real_aws_refused()
    session = _session()
    region = session.region_name or DEFAULT_REGION
    backend = Backend(
        name="aws",
        region=region,
        clock=ScaledClock(settings().time_scale),
        make_client=lambda service, config: session.client(service, region_name=region, config=config),
        details={"emulator": "none: real AWS"},
    )
    try:
        backend.details["account"] = backend.account_id
    except Exception as exc:  # botocore raises several unrelated types here
        raise BackendUnavailable(
            f"could not identify the AWS account ({exc}); configure credentials (aws configure) and retry"
        ) from exc
    return backend


def _post_json(url: str, payload: dict[str, Any]) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def _require_reachable(url: str, what: str, hint: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            response.read()
    except urllib.error.HTTPError:
        return  # it answered; a 4xx from a bare endpoint still proves it is up
    except OSError as exc:
        raise BackendUnavailable(f"{what} is not reachable at {url} ({exc}); {hint}") from exc


def _localstack_version(endpoint: str) -> str:
    try:
        with urllib.request.urlopen(f"{endpoint}/_localstack/info", timeout=3) as response:
            return str(json.loads(response.read()).get("version", "unknown"))
    except (OSError, ValueError):
        return "unknown"

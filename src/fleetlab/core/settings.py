"""fleetlab's settings: every environment variable the library reads, read and checked in one place.

``settings()`` reads the environment when it is called (never cached, so a
variable set since, or by a test, counts) and returns a frozen ``Settings``.
A variable that is unset or blank takes its default; one whose value is not
allowed raises ConfigError naming the variable and the values it takes.
``docs/settings.md`` documents every variable in one table (a test keeps
the table and ``Settings.variables()`` the same).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fleetlab.core.errors import ConfigError
from fleetlab.core.timescale import DEFAULT_SCALE, SCALES

BACKEND_NAMES = ("moto", "moto-server", "localstack", "aws")
"""The backends fleetlab opens, in the order the docs list them."""

EXPECTATIONS = ("pass", "not yet")
"""What ``FLEETLAB_EXPECT_CHECKS`` may require of every check (a check's status strings)."""

DOCS = "docs/settings.md"

Parse = Callable[[str, str], Any]


def _refused(variable: str, raw: str, allowed: str, problem: str = "") -> ConfigError:
    """The error for ``variable=raw``: what is wrong with it, and the values it takes."""
    why = f" ({problem})" if problem else ""
    return ConfigError(
        f"{variable}={raw!r} is not allowed{why}: use {allowed}, or unset it for the default ({DOCS})"
    )


def _backend(variable: str, raw: str) -> str:
    name = raw.lower()
    if name not in BACKEND_NAMES:
        raise _refused(variable, raw, "one of " + ", ".join(BACKEND_NAMES))
    return name


def _backends(variable: str, raw: str) -> tuple[str, ...]:
    names = tuple(name.strip().lower() for name in raw.split(",") if name.strip())
    unknown = [name for name in names if name not in BACKEND_NAMES]
    if unknown or not names:
        allowed = "a comma-separated list of " + ", ".join(BACKEND_NAMES)
        raise _refused(variable, raw, allowed, f"{', '.join(unknown)} is not a backend" if unknown else "")
    return names


def _opt_in(variable: str, raw: str) -> bool:
    if raw not in ("0", "1"):
        raise _refused(variable, raw, "1 to opt in, or 0")
    return raw == "1"


def _scale(variable: str, raw: str) -> int:
    allowed = "one of " + ", ".join(map(str, SCALES))
    try:
        scale = int(raw)
    except ValueError:
        raise _refused(variable, raw, allowed, f"{raw!r} is not a whole number") from None
    if scale not in SCALES:
        raise _refused(variable, raw, allowed, f"{scale} does not divide 60")
    return scale


def _expectation(variable: str, raw: str) -> str:
    wanted = raw.lower().replace("-", " ")
    if wanted not in EXPECTATIONS:
        raise _refused(variable, raw, "pass or not-yet")
    return wanted


def _url(variable: str, raw: str) -> str:
    if not raw.startswith(("http://", "https://")):
        raise _refused(variable, raw, "an http:// or https:// URL, such as http://localhost:4566")
    return raw.rstrip("/")


def _folder(variable: str, raw: str) -> Path:
    return Path(raw).expanduser()


def _text(variable: str, raw: str) -> str:
    return raw


LEARNER_MAX = 12
"""The longest learner name a resource prefix carries (resource names have length limits)."""


def _learner(variable: str, raw: str) -> str:
    name = raw.lower()
    if not (name.isascii() and name.isalnum()) or len(name) > LEARNER_MAX:
        raise _refused(variable, raw, f"letters and digits only, at most {LEARNER_MAX} of them, such as alice07")
    return name


def _setting(variable: str, parse: Parse, default: Any = None) -> Any:
    """A field of Settings, read from ``variable`` with ``parse`` when it is set (not blank)."""
    return field(default=default, metadata={"variable": variable, "parse": parse})


@dataclass(frozen=True)
class Settings:
    """What the environment asks of fleetlab; each field is read from one variable (docs/settings.md)."""

    backend: str = _setting("FLEETLAB_BACKEND", _backend, "moto")
    """The backend ``fleetlab.start`` and the commands open when none is named."""
    allow_real_aws: bool = _setting("FLEETLAB_ALLOW_REAL_AWS", _opt_in, False)
    """The learner opted in to the billable ``aws`` backend."""
    time_scale: int = _setting("FLEETLAB_TIME_SCALE", _scale, DEFAULT_SCALE)
    """Lab seconds per real second on a real clock (LocalStack, AWS)."""
    home: Path | None = _setting("FLEETLAB_HOME", _folder)
    """fleetlab's own folder (progress, the fidelity cache); None: each reader's default."""
    fidelity_cache: Path | None = _setting("FLEETLAB_FIDELITY_CACHE", _folder)
    """A folder for the fidelity tables shared by many kernels; None: ``home``."""
    learner: str | None = _setting("FLEETLAB_LEARNER", _learner)
    """Whose resources these are (a JupyterHub room sets the hub user): every resource prefix starts
    ``fl-<learner>-``; None: no learner in the prefix."""
    expect_checks: str | None = _setting("FLEETLAB_EXPECT_CHECKS", _expectation)
    """``pass`` or ``not yet``: what every ``check()`` must say (a CI run of the notebooks); None: anything."""
    graded: bool = _setting("FLEETLAB_GRADED", _opt_in, False)
    """The grader runs this kernel: ``check()`` keeps the answer and runs no case (the grader's judge does)."""
    localstack_endpoint: str = _setting("LOCALSTACK_ENDPOINT", _url, "http://localhost:4566")
    """Where the ``localstack`` backend finds LocalStack."""
    dynamodb_endpoint: str | None = _setting("FLEETLAB_DYNAMODB_ENDPOINT", _url)
    """Where the ``localstack`` backend finds DynamoDB when it is served apart; None: LocalStack serves it."""
    s3_endpoint: str | None = _setting("FLEETLAB_S3_ENDPOINT", _url)
    """Where the ``localstack`` backend finds S3 when it is served apart; None: LocalStack serves it."""
    contract_backends: tuple[str, ...] = _setting("FLEETLAB_CONTRACT_BACKENDS", _backends, ("moto", "moto-server"))
    """The backends the contract suite runs on."""
    localstack_python: str | None = _setting("FLEETLAB_LOCALSTACK_PYTHON", _text)
    """The Python >= 3.13 to install LocalStack with; None: the tooling searches for one."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings read from ``environ`` (default: this process's environment, now).

        Raises ConfigError naming the first variable whose value is not allowed.
        """
        environ = os.environ if environ is None else environ
        values = {}
        for setting in fields(cls):
            variable = setting.metadata["variable"]
            raw = environ.get(variable, "").strip()
            if raw:
                values[setting.name] = setting.metadata["parse"](variable, raw)
        return cls(**values)

    @classmethod
    def variables(cls) -> tuple[str, ...]:
        """Every environment variable Settings reads, in field order."""
        return tuple(setting.metadata["variable"] for setting in fields(cls))

    @classmethod
    def variable_of(cls, name: str) -> str:
        """The environment variable the field ``name`` is read from."""
        return next(setting.metadata["variable"] for setting in fields(cls) if setting.name == name)

    @property
    def served_apart(self) -> dict[str, str]:
        """The services a LocalStack set-up serves from another endpoint, and that endpoint's URL."""
        endpoints = {"dynamodb": self.dynamodb_endpoint, "s3": self.s3_endpoint}
        return {service: url for service, url in endpoints.items() if url}


SERVED_APART = {service: Settings.variable_of(f"{service}_endpoint") for service in ("dynamodb", "s3")}
"""The services a LocalStack set-up may serve apart (``make localstack-up`` serves them from moto on :4567),
and the variable naming each one's endpoint."""


def settings() -> Settings:
    """This process's settings, read from its environment now; ConfigError for a value not allowed."""
    return Settings.from_env()

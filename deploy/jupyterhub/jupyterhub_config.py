"""JupyterHub configuration for a fleetlab workshop room (deploy/jupyterhub/README.md).

One single-user server per learner. Each learner's server, and every kernel it starts, gets:

- ``FLEETLAB_HOME=~/.fleetlab``: the learner's progress (``progress.json``) and fidelity tables, in the
  learner's own home;
- ``FLEETLAB_LEARNER``: the hub user's name as a resource prefix carries it, so every resource the
  learner's labs make is named ``fl-<learner>-...`` (``fleetlab cleanup --prefix fl-<learner>-``
  removes one learner's leftovers);
- the backend: ``moto`` inside the learner's own kernel (the default: nothing shared, nothing to run),
  or the room's one LocalStack when the facilitator names it in the hub's environment:

  ``FLEETLAB_ROOM_LOCALSTACK``  the LocalStack every learner uses, e.g. ``http://10.0.0.5:4566``
                                (learners get ``FLEETLAB_BACKEND=localstack`` and ``LOCALSTACK_ENDPOINT``);
  ``FLEETLAB_ROOM_MOTO``        optional, with it: the moto server serving DynamoDB and S3 beside that
                                LocalStack, e.g. ``http://10.0.0.5:4567`` (``make localstack-up``'s split).

It only adds to what the installation configures (authenticator, spawner, image, storage): load it
after that, as TLJH's ``jupyterhub_config.d/`` and Zero to JupyterHub's ``hub.extraConfig`` do.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

LEARNER_MAX = 12
"""As ``fleetlab.core.settings.LEARNER_MAX``: the longest learner name a resource prefix carries."""


def learner_label(username: str) -> str:
    """The hub user as ``FLEETLAB_LEARNER`` takes it: letters and digits, at most 12, one per user.

    A name that is already letters and digits (12 at most) is kept, lower-cased; any other (an e-mail
    address, a name with a dot) keeps its first five letters or digits and adds seven hex digits of
    its hash, so two hub users never share a label.
    """
    plain = username.lower()
    if plain.isascii() and plain.isalnum() and len(plain) <= LEARNER_MAX:
        return plain
    kept = "".join(ch for ch in plain if ch.isascii() and ch.isalnum())[:5]
    return kept + hashlib.sha256(username.encode()).hexdigest()[:7]


def room_backend(environ: dict[str, str]) -> dict[str, str]:
    """The backend variables every learner gets: moto in the kernel, or the room's LocalStack if named."""
    localstack = environ.get("FLEETLAB_ROOM_LOCALSTACK", "").strip()
    if not localstack:
        return {"FLEETLAB_BACKEND": "moto"}
    backend = {"FLEETLAB_BACKEND": "localstack", "LOCALSTACK_ENDPOINT": localstack}
    moto = environ.get("FLEETLAB_ROOM_MOTO", "").strip()
    if moto:
        backend |= {"FLEETLAB_DYNAMODB_ENDPOINT": moto, "FLEETLAB_S3_ENDPOINT": moto}
    return backend


def learner_environment(username: str, environ: dict[str, str]) -> dict[str, str]:
    """Everything one learner's server and kernels are given; nothing in it is shared with another learner."""
    return {
        "FLEETLAB_HOME": "~/.fleetlab",
        "FLEETLAB_LEARNER": learner_label(username),
        "FLEETLAB_ALLOW_REAL_AWS": "0",
        **room_backend(environ),
    }


def give_learner_environment(spawner: Any) -> None:
    """JupyterHub's pre-spawn hook: a fresh environment for this learner's server, on this spawner only.

    The dict is replaced, never updated in place: the configured one is shared by every spawner.
    """
    spawner.environment = {**spawner.environment, **learner_environment(spawner.user.name, dict(os.environ))}


# JupyterHub's config loader (load_subconfig, TLJH's jupyterhub_config.d/) and Zero to JupyterHub's
# hub.extraConfig run this file where `c` is the hub's config; a test imports the functions without it.
if "c" in globals():
    c.Spawner.pre_spawn_hook = give_learner_environment  # noqa: F821
    c.Spawner.default_url = "/lab/tree/labs"  # noqa: F821

"""The JupyterHub room's configuration (deploy/jupyterhub/jupyterhub_config.py), without a hub.

tests/test_jupyterhub.py runs it on a real hub; here: what each learner is given, for every room.
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from traitlets.config import Config

from fleetlab.core.settings import LEARNER_MAX, Settings

ROOM_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub" / "jupyterhub_config.py"


def load_room(config: Config | None = None):
    """The configuration file as a module; with ``config``, as JupyterHub's loader runs it (``c`` defined)."""
    spec = importlib.util.spec_from_file_location("fleetlab_room_config", ROOM_CONFIG)
    module = importlib.util.module_from_spec(spec)
    if config is not None:
        module.c = config
    spec.loader.exec_module(module)
    return module


room = load_room()


@pytest.mark.parametrize(
    ("username", "label"), [("alice", "alice"), ("Bob07", "bob07"), ("abcdefghijkl", "abcdefghijkl")]
)
def test_a_plain_hub_user_name_is_the_learner_label(username, label):
    assert room.learner_label(username) == label


def test_any_other_name_becomes_a_label_fleetlab_accepts_and_no_two_users_share_one():
    names = ["carol.jones", "carol.jonas", "carol@example.org", "abcdefghijklm", "ünïcode", "-", "a" * 40]
    labels = [room.learner_label(name) for name in names]
    assert len(set(labels)) == len(names)
    for name, label in zip(names, labels, strict=True):
        assert Settings.from_env({"FLEETLAB_LEARNER": label}).learner == label, name
    assert room.LEARNER_MAX == LEARNER_MAX
    assert labels[0].startswith("carol") and len(labels[0]) == 12


def test_without_a_room_localstack_each_learner_gets_moto_in_their_own_kernel():
    given = room.learner_environment("carol.jones", {})
    assert given == {"FLEETLAB_HOME": "~/.fleetlab", "FLEETLAB_LEARNER": room.learner_label("carol.jones"),
                     "FLEETLAB_ALLOW_REAL_AWS": "0", "FLEETLAB_BACKEND": "moto"}
    chosen = Settings.from_env(given)
    assert chosen.backend == "moto" and chosen.home == Path("~/.fleetlab").expanduser()


def test_a_room_localstack_named_by_the_facilitator_is_every_learners_backend():
    hub_env = {"FLEETLAB_ROOM_LOCALSTACK": " http://10.0.0.5:4566 ", "FLEETLAB_ROOM_MOTO": "http://10.0.0.5:4567"}
    chosen = Settings.from_env(room.learner_environment("alice", hub_env))
    assert (chosen.backend, chosen.localstack_endpoint) == ("localstack", "http://10.0.0.5:4566")
    assert chosen.served_apart == {"dynamodb": "http://10.0.0.5:4567", "s3": "http://10.0.0.5:4567"}
    alone = Settings.from_env(room.learner_environment("alice", {"FLEETLAB_ROOM_LOCALSTACK": "http://ls:4566"}))
    assert (alone.backend, alone.served_apart) == ("localstack", {})


def test_the_pre_spawn_hook_gives_each_spawner_its_own_environment_and_keeps_what_was_configured():
    shared = {"TZ": "UTC"}
    alice = SimpleNamespace(user=SimpleNamespace(name="alice"), environment=shared)
    bob = SimpleNamespace(user=SimpleNamespace(name="bob"), environment=shared)
    room.give_learner_environment(alice)
    room.give_learner_environment(bob)
    assert shared == {"TZ": "UTC"}
    assert (alice.environment["FLEETLAB_LEARNER"], bob.environment["FLEETLAB_LEARNER"]) == ("alice", "bob")
    assert alice.environment["TZ"] == bob.environment["TZ"] == "UTC"


def test_loaded_by_jupyterhub_it_sets_the_hook_and_the_landing_page_only():
    config = Config()
    loaded = load_room(config)
    assert config.Spawner.pre_spawn_hook is loaded.give_learner_environment
    assert config.Spawner.default_url == "/lab/tree/labs"
    assert sorted(config) == ["Spawner"] and sorted(config.Spawner) == ["default_url", "pre_spawn_hook"]


def test_run_as_zero_to_jupyterhub_runs_hub_extra_config_it_uses_the_charts_c():
    """The chart exec()s hub.extraConfig where ``c`` is the config and ``get_config`` is its own helper."""
    config = Config()

    def chart_get_config(key, default=None):  # z2jh.get_config's signature: a key is required
        return default

    exec(ROOM_CONFIG.read_text(), {"c": config, "get_config": chart_get_config})  # noqa: S102
    assert config.Spawner.default_url == "/lab/tree/labs"
    assert callable(config.Spawner.pre_spawn_hook)


def test_the_lab_image_carries_the_jupyterhub_the_tests_run_as_zero_to_jupyterhub_needs():
    """The Dockerfile installs jupyterhub (for ``jupyterhub-singleuser``) at the test extra's pin."""
    repo = ROOM_CONFIG.parents[2]
    test_extra = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    (pin,) = [requirement for requirement in test_extra if requirement.startswith("jupyterhub==")]
    installs = [line for line in (repo / "Dockerfile").read_text().splitlines() if "pip install" in line]
    assert any(f'"{pin}"' in line for line in installs), installs
    assert "COPY labs /opt/fleetlab/labs" in (repo / "Dockerfile").read_text()

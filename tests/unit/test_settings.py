"""The settings: each variable read and checked in one place, and documented in one table."""

import re
from pathlib import Path

import pytest

from fleetlab.core.errors import ConfigError
from fleetlab.core.settings import EXPECTATIONS, Settings, settings
from fleetlab.course.grading.results import CheckStatus

DOCS = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_an_empty_environment_gives_every_default():
    assert Settings.from_env({}) == Settings()
    assert Settings.from_env({}).backend == "moto"
    assert Settings.from_env({}).time_scale == 60
    assert Settings.from_env({}).contract_backends == ("moto", "moto-server")
    assert Settings.from_env({}).served_apart == {}


@pytest.mark.parametrize(
    ("variable", "raw", "name", "value"),
    [
        ("FLEETLAB_BACKEND", " LocalStack ", "backend", "localstack"),
        ("FLEETLAB_ALLOW_REAL_AWS", "1", "allow_real_aws", True),
        ("FLEETLAB_ALLOW_REAL_AWS", "0", "allow_real_aws", False),
        ("FLEETLAB_TIME_SCALE", " 30 ", "time_scale", 30),
        ("FLEETLAB_HOME", "/tmp/fleetlab-home", "home", Path("/tmp/fleetlab-home")),
        ("FLEETLAB_FIDELITY_CACHE", "/tmp/shared", "fidelity_cache", Path("/tmp/shared")),
        ("FLEETLAB_LEARNER", " Alice07 ", "learner", "alice07"),
        ("FLEETLAB_EXPECT_CHECKS", "Not-Yet", "expect_checks", "not yet"),
        ("FLEETLAB_EXPECT_CHECKS", "pass", "expect_checks", "pass"),
        ("LOCALSTACK_ENDPOINT", "http://127.0.0.1:4566/", "localstack_endpoint", "http://127.0.0.1:4566"),
        ("FLEETLAB_DYNAMODB_ENDPOINT", "http://127.0.0.1:4567", "dynamodb_endpoint", "http://127.0.0.1:4567"),
        ("FLEETLAB_S3_ENDPOINT", "https://s3.example/", "s3_endpoint", "https://s3.example"),
        ("FLEETLAB_CONTRACT_BACKENDS", "localstack, aws,", "contract_backends", ("localstack", "aws")),
        ("FLEETLAB_LOCALSTACK_PYTHON", "/opt/python3.13", "localstack_python", "/opt/python3.13"),
    ],
)
def test_each_variable_sets_its_field(variable, raw, name, value):
    assert getattr(Settings.from_env({variable: raw}), name) == value
    assert Settings.variable_of(name) == variable


def test_a_blank_variable_is_unset():
    assert Settings.from_env({"FLEETLAB_BACKEND": "  ", "FLEETLAB_TIME_SCALE": ""}) == Settings()


@pytest.mark.parametrize(
    ("variable", "raw", "allowed"),
    [
        ("FLEETLAB_BACKEND", "mtoo", "use one of moto, moto-server, localstack, aws"),
        ("FLEETLAB_ALLOW_REAL_AWS", "yes", "use 1 to opt in, or 0"),
        ("FLEETLAB_TIME_SCALE", "7", "7 does not divide 60"),
        ("FLEETLAB_TIME_SCALE", "fast", "'fast' is not a whole number"),
        ("FLEETLAB_TIME_SCALE", "0", "0 does not divide 60"),
        ("FLEETLAB_LEARNER", "alice-07", "use letters and digits only, at most 12 of them"),
        ("FLEETLAB_LEARNER", "thirteenchars", "use letters and digits only, at most 12 of them"),
        ("FLEETLAB_EXPECT_CHECKS", "green", "use pass or not-yet"),
        ("LOCALSTACK_ENDPOINT", "localhost:4566", "use an http:// or https:// URL"),
        ("FLEETLAB_DYNAMODB_ENDPOINT", "127.0.0.1:4567", "use an http:// or https:// URL"),
        ("FLEETLAB_S3_ENDPOINT", "s3", "use an http:// or https:// URL"),
        ("FLEETLAB_CONTRACT_BACKENDS", "moto,mtoo", "mtoo is not a backend"),
        ("FLEETLAB_CONTRACT_BACKENDS", ",", "a comma-separated list of moto, moto-server, localstack, aws"),
    ],
)
def test_a_value_not_allowed_is_refused_naming_the_variable_and_the_allowed_values(variable, raw, allowed):
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({variable: raw})
    message = str(refused.value)
    assert message.startswith(f"{variable}={raw.strip()!r} is not allowed")
    assert allowed in message and "docs/settings.md" in message


def test_a_time_scale_refusal_lists_every_scale_allowed():
    with pytest.raises(ConfigError, match="use one of 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60"):
        Settings.from_env({"FLEETLAB_TIME_SCALE": "7"})


def test_settings_are_read_when_asked_not_at_import(monkeypatch):
    monkeypatch.setenv("FLEETLAB_BACKEND", "moto-server")
    assert settings().backend == "moto-server"
    monkeypatch.setenv("FLEETLAB_BACKEND", "aws")
    assert settings().backend == "aws"
    monkeypatch.setenv("FLEETLAB_BACKEND", "nope")
    with pytest.raises(ConfigError, match="FLEETLAB_BACKEND='nope'"):
        settings()


def test_the_endpoints_served_apart_are_named_by_service():
    chosen = Settings.from_env({"FLEETLAB_DYNAMODB_ENDPOINT": "http://127.0.0.1:4567"})
    assert chosen.served_apart == {"dynamodb": "http://127.0.0.1:4567"}


def test_the_expectations_are_check_statuses():
    assert set(EXPECTATIONS) == {CheckStatus.PASS, CheckStatus.NOT_YET}


def documented_variables() -> list[str]:
    """The first cell of each row of docs/settings.md's table."""
    return [match[1] for match in re.finditer(r"^\| `([A-Z0-9_]+)` \|", DOCS.read_text(), re.MULTILINE)]


def test_the_docs_table_lists_exactly_the_variables_settings_reads():
    documented = documented_variables()
    assert len(documented) == len(set(documented)), "a variable is documented twice"
    assert sorted(documented) == sorted(Settings.variables())

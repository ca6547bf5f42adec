from pathlib import Path

from fleetlab_instructor.grade.environment import kernel_env, measure_graded_backend, share_fidelity_tables

from fleetlab.backends import fidelity
from fleetlab.backends.fidelity import Feature, Observation, Probe
from fleetlab.backends.fidelity.cache import failed_findings
from fleetlab.core.errors import Timeout

GRADER = {
    "PATH": "/usr/bin",
    "PYTHONPATH": "/fixtures",
    "LANG": "C.UTF-8",
    "HOME": "/home/grader",
    "AWS_ACCESS_KEY_ID": "AKIAFLEETLABFAKE0001",
    "AWS_SECRET_ACCESS_KEY": "fleetlab-fake-secret",
    "AWS_SESSION_TOKEN": "token",
    "AWS_PROFILE": "prod",
    "AWS_SHARED_CREDENTIALS_FILE": "/home/grader/.aws/credentials",
    "AWS_CONFIG_FILE": "/home/grader/.aws/config",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials",
    "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/token",
    "GITHUB_TOKEN": "ghp_secret",
    "FLEETLAB_ALLOW_REAL_AWS": "1",
    "FLEETLAB_BACKEND": "aws",
    "FLEETLAB_DYNAMODB_ENDPOINT": "http://localhost:4567",
}


def test_no_credential_reaches_the_kernel(tmp_path):
    env = kernel_env(GRADER, tmp_path, tmp_path / "shared")
    secrets = {value for name, value in GRADER.items() if name.startswith("AWS_") or "TOKEN" in name}
    leaked = [value for value in env.values() if value in secrets]
    assert leaked == []
    assert "GITHUB_TOKEN" not in env and "FLEETLAB_ALLOW_REAL_AWS" not in env


def test_credential_files_point_nowhere_and_home_is_fresh(tmp_path):
    env = kernel_env(GRADER, tmp_path, tmp_path / "shared")
    assert env["HOME"] == str(tmp_path)
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
        assert not Path(env[name]).exists() and env[name].startswith(str(tmp_path))
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"
    assert env["FLEETLAB_BACKEND"] == "moto"
    assert env["FLEETLAB_GRADED"] == "1"  # check() runs no case: the judge does
    assert env["FLEETLAB_HOME"].startswith(str(tmp_path))


def test_what_python_needs_passes_through(tmp_path):
    env = kernel_env(GRADER, tmp_path, tmp_path / "shared")
    assert (env["PATH"], env["PYTHONPATH"], env["LANG"]) == ("/usr/bin", "/fixtures", "C.UTF-8")
    assert env["FLEETLAB_DYNAMODB_ENDPOINT"] == "http://localhost:4567"


def test_the_batch_shares_caches_but_not_homes(tmp_path):
    first = kernel_env(GRADER, tmp_path / "one", tmp_path / "shared")
    second = kernel_env(GRADER, tmp_path / "two", tmp_path / "shared")
    assert first["FLEETLAB_FIDELITY_CACHE"] == second["FLEETLAB_FIDELITY_CACHE"]
    assert first["MPLCONFIGDIR"] == second["MPLCONFIGDIR"]
    assert first["FLEETLAB_HOME"] != second["FLEETLAB_HOME"]


def test_the_batch_starts_from_the_graders_fidelity_tables_and_takes_nothing_else(tmp_path, monkeypatch):
    own = tmp_path / "grader-cache"
    own.mkdir()
    (own / "fidelity-moto-5.2.5.json").write_text('{"backend": "moto"}')
    (own / "progress.json").write_text("{}")  # not a table: stays with the grader
    monkeypatch.setenv("FLEETLAB_FIDELITY_CACHE", str(own))
    share_fidelity_tables(tmp_path / "shared")
    env = kernel_env(GRADER, tmp_path / "one", tmp_path / "shared")
    shared = Path(env["FLEETLAB_FIDELITY_CACHE"])
    assert sorted(path.name for path in shared.iterdir()) == ["fidelity-moto-5.2.5.json"]
    assert (shared / "fidelity-moto-5.2.5.json").read_text() == '{"backend": "moto"}'


def test_the_grader_measures_the_graded_backends_table_once_for_every_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETLAB_FIDELITY_CACHE", str(tmp_path / "grader-cache"))
    table = measure_graded_backend()
    assert [f"{f.feature}: {f.observed}" for f in failed_findings(table)] == []  # a failed table is never cached
    tables = sorted(path.name for path in (tmp_path / "grader-cache").glob("fidelity-moto-*.json"))
    assert len(tables) == 1
    written = (tmp_path / "grader-cache" / tables[0]).stat().st_mtime_ns
    measure_graded_backend()  # cached: read, not measured again
    assert (tmp_path / "grader-cache" / tables[0]).stat().st_mtime_ns == written
    share_fidelity_tables(tmp_path / "shared")
    assert [path.name for path in (tmp_path / "shared" / "fidelity").iterdir()] == tables


def test_a_probe_that_fails_once_is_measured_again_and_the_table_cached(tmp_path, monkeypatch):
    attempts = []

    def fails_once(scratch):
        attempts.append(1)
        if len(attempts) == 1:
            raise Timeout("the machine was busy")
        return Observation("measured", True)

    feature = Feature("test.fails_once", "A probe that fails on its first run", aws="-", workaround="-")
    monkeypatch.setattr(fidelity.probes, "PROBES", [Probe((feature,), fails_once)])
    monkeypatch.setenv("FLEETLAB_FIDELITY_CACHE", str(tmp_path))
    table = measure_graded_backend()
    assert len(attempts) == 2 and table.get("test.fails_once").observed == "measured"
    assert len(list(tmp_path.glob("fidelity-moto-*.json"))) == 1

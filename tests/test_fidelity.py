"""The capability probe measures the emulators for real; the table keeps its contract.

Each emulator is probed once for the module (one backend open at a time, the
virtual clock being process-wide); the other tests reuse those tables, or
replace the measurement with a stand-in where what they check is the caching
and rendering around it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from fleetlab_tools import fidelity_doc
from rich.table import Table

from fleetlab.backends import fidelity
from fleetlab.backends.backend import Backend, open_backend
from fleetlab.backends.fidelity import Feature, FidelityTable, Finding, Probe, probe
from fleetlab.core.clock import RealClock
from fleetlab.core.errors import ConfigError

EMULATORS = ("moto", "moto-server")

# What moto 5.2.5 does, in-process and as a server: (matches AWS, words the observation contains).
MOTO_5_2_5 = {
    "sqs.visibility_timeout": (True, "back at +901 s with ApproximateReceiveCount 2"),
    "sqs.redrive_receive": (True, "receive 4 finds it in the DLQ"),
    "sqs.redelivery_delay": (True, "at once: receivable again as soon as the timeout expired"),
    "sqs.stale_receipt_delete": (False, "succeeds and deletes the message"),
    "sqs.move_task_to_source": (False, "not implemented"),
    "sqs.move_task_to_destination": (False, "not implemented"),
    "sqs.fifo_dedup_after_delete": (False, "accepted again"),
    "sqs.fifo_order_after_return": (False, "step 3 first: the group's order is lost"),
    "events.put_events_entry_size": (False, "accepted"),
    "events.delivered_envelope": (False, "missing: account"),
    "events.immediate_receive": (False, "found the event every time (30 of 30)"),
    "events.target_dead_letter": (False, "rejected: the whole PutEvents failed (QueueDoesNotExist)"),
    "events.replay_delivered": (True, "with a new id"),
    "events.replay_name_field": (True, "replay-name is the replay's name"),
    "events.replay_time_window": (False, "ignored"),
    "events.replay_filter_arns": (False, "ignored"),
    "events.invalid_pattern": (True, "refused: InvalidEventPatternException"),
    "stepfunctions.heartbeat_timeout_error": (False, "fails with States.Timeout"),
    "stepfunctions.late_task_success": (False, "rejected with InvalidToken"),
    "stepfunctions.late_task_failure": (False, "accepted silently"),
    "stepfunctions.retry_task_token": (False, "the same token as the failed attempt"),
    "stepfunctions.stop_waiting_execution": (False, "stays RUNNING until its task is answered"),
    "stepfunctions.large_task_output": (False, "accepted"),
    "stepfunctions.unnamed_execution": (False, 'named "None"'),
    "stepfunctions.start_sync_execution": (False, "not implemented"),
    "dynamodb.ttl_deletion": (False, "never deleted"),
}
NO_LEFTOVERS = {"queues": [], "buses": [], "archives": [], "state machines": [], "tables": []}


@dataclass(frozen=True)
class Probed:
    table: FidelityTable
    leftovers: dict[str, list[str]]
    clock_moved: float


def leftovers(backend: Backend) -> dict[str, list[str]]:
    """Everything named like a probe's resource that is still on the backend."""
    events = backend.client("events")
    prefix = "flprobe-"
    return {
        "queues": backend.client("sqs").list_queues(QueueNamePrefix=prefix).get("QueueUrls", []),
        "buses": [b["Name"] for b in events.list_event_buses(NamePrefix=prefix)["EventBuses"]],
        "archives": [a["ArchiveName"] for a in events.list_archives(NamePrefix=prefix)["Archives"]],
        "state machines": [
            m["name"]
            for m in backend.client("stepfunctions").list_state_machines()["stateMachines"]
            if m["name"].startswith(prefix)
        ],
        "tables": [t for t in backend.client("dynamodb").list_tables()["TableNames"] if t.startswith(prefix)],
    }


@pytest.fixture(scope="module", autouse=True)
def _own_cache_folder():
    """The probes and their cache measured here, not the test run's shared cache (the Makefile's TEST_FIDELITY)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("FLEETLAB_FIDELITY_CACHE", raising=False)
        yield


@pytest.fixture(scope="module")
def fleetlab_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fleetlab-home")


@pytest.fixture(scope="module")
def probed(fleetlab_home: Path) -> dict[str, Probed]:
    """Each emulator measured once, opened and closed in turn."""
    results = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLEETLAB_HOME", str(fleetlab_home))
        for name in EMULATORS:
            backend = open_backend(name)
            try:
                before = backend.clock.now()
                table = probe(backend, refresh=True)
                results[name] = Probed(table, leftovers(backend), backend.clock.now() - before)
            finally:
                backend.close()
    return results


@pytest.fixture
def moto_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Backend]:
    """In-process moto with an empty FLEETLAB_HOME of its own."""
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))
    backend = open_backend("moto")
    yield backend
    backend.close()


def stand_in_measure(findings: tuple[Finding, ...]) -> tuple[list[Backend], object]:
    """A replacement for fidelity.probes.measure that returns ``findings`` and records each call."""
    calls: list[Backend] = []

    def measure(backend: Backend) -> tuple[Finding, ...]:
        calls.append(backend)
        return findings

    return calls, measure


# --------------------------------------------------------------------------- what is measured


def test_expectations_cover_every_probed_feature() -> None:
    assert sorted(fidelity.feature_ids()) == sorted(MOTO_5_2_5)


@pytest.mark.parametrize("backend_name", EMULATORS)
@pytest.mark.parametrize("feature", list(MOTO_5_2_5))
def test_probe_measures_moto_5_2_5(probed: dict[str, Probed], backend_name: str, feature: str) -> None:
    matches_aws, words = MOTO_5_2_5[feature]
    finding = probed[backend_name].table.get(feature)
    assert finding.matches_aws is matches_aws, finding
    assert words in finding.observed, finding


def test_moto_and_moto_server_agree(probed: dict[str, Probed]) -> None:
    moto, server = (probed[name].table for name in EMULATORS)
    assert [(f.feature, f.matches_aws) for f in moto.findings] == [
        (f.feature, f.matches_aws) for f in server.findings
    ]


@pytest.mark.parametrize("feature", ["sqs.move_task_to_source", "sqs.move_task_to_destination"])
def test_move_task_failure_is_reported_as_each_backend_shows_it(probed: dict[str, Probed], feature: str) -> None:
    in_process = probed["moto"].table.get(feature).observed
    server = probed["moto-server"].table.get(feature).observed
    assert "NotImplementedError" in in_process
    assert "HTTP 500" in server


@pytest.mark.parametrize("backend_name", EMULATORS)
def test_only_divergences_carry_a_workaround(probed: dict[str, Probed], backend_name: str) -> None:
    table = probed[backend_name].table
    assert all(f.workaround for f in table.divergences())
    assert not any(f.workaround for f in table.findings if f.matches_aws)
    move_task = table.get("sqs.move_task_to_destination")
    assert "receive + send + delete" in move_task.workaround


@pytest.mark.parametrize("backend_name", EMULATORS)
def test_probe_deletes_everything_it_made(probed: dict[str, Probed], backend_name: str) -> None:
    assert probed[backend_name].leftovers == NO_LEFTOVERS


@pytest.mark.parametrize("backend_name", EMULATORS)
def test_probing_leaves_the_clock_where_it_was(probed: dict[str, Probed], backend_name: str) -> None:
    assert abs(probed[backend_name].clock_moved) < 1  # the TTL probe jumped 3 days, and back


@pytest.mark.parametrize("backend_name", EMULATORS)
def test_table_records_the_versions_measured(probed: dict[str, Probed], backend_name: str) -> None:
    versions = probed[backend_name].table.versions
    assert versions["moto"] == "5.2.5"
    assert set(versions) == {"moto", "boto3", "probes"}


def probe_measuring(feature_id: str) -> Probe:
    return next(p for p in fidelity.probes.PROBES if feature_id in {feature.id for feature in p.features})


@pytest.mark.parametrize(
    ("feature_id", "observed"),
    [
        ("events.immediate_receive", "probe failed: Timeout: the event of trial 1 was not delivered within 5 s"),
        ("events.replay_delivered",
         "probe failed: MeasurementFailed: the original event was never delivered, so nothing could be replayed"),
    ],
)
def test_an_event_never_delivered_fails_its_probe_with_the_fitting_error(
    moto_backend: Backend, monkeypatch: pytest.MonkeyPatch, feature_id: str, observed: str
) -> None:
    monkeypatch.setattr(fidelity.probes, "PROBES", [probe_measuring(feature_id)])
    monkeypatch.setattr(fidelity.Scratch, "receive", lambda self, url, *, wait: None)
    assert probe(moto_backend, refresh=True).get(feature_id).observed == observed


@pytest.mark.parametrize("slow", ["on the way there", "on the way back"])
def test_a_slow_receive_is_not_read_as_a_late_or_early_redelivery(
    moto_backend: Backend, monkeypatch: pytest.MonkeyPatch, slow: str
) -> None:
    receive = fidelity.Scratch.receive

    def slow_receive(self: fidelity.Scratch, url: str, *, wait: int) -> dict | None:
        if slow == "on the way there":
            self.let_pass(SLOW_RECEIVE)  # a fault injected in the client (a busy machine), not a wait for anything
        message = receive(self, url, wait=wait)
        if slow == "on the way back":
            self.let_pass(SLOW_RECEIVE)
        return message

    monkeypatch.setattr(fidelity.probes, "PROBES", [probe_measuring("sqs.redelivery_delay")])
    monkeypatch.setattr(fidelity.Scratch, "receive", slow_receive)
    observed = probe(moto_backend, refresh=True).get("sqs.redelivery_delay").observed
    assert observed == "at once: receivable again as soon as the timeout expired"


SLOW_RECEIVE = 0.7  # seconds each receive spends in transit: more than the probe's 0.5 s of "on time"


def test_a_probe_with_an_observation_missing_is_a_failed_measurement(
    moto_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    features = tuple(Feature(f"test.half_{n}", "A probe that observes half", aws="-", workaround="-") for n in (1, 2))
    monkeypatch.setattr(fidelity.probes, "PROBES", [Probe(features, lambda scratch: fidelity.Observation("one", True))])
    table = probe(moto_backend, refresh=True)
    assert [table.get(feature.id).observed for feature in features] == [
        "probe failed: MeasurementFailed: 1 observations for 2 features"] * 2


def test_failed_probe_is_recorded_cleaned_up_and_not_cached(
    moto_backend: Backend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def falls_over(scratch: fidelity.Scratch) -> fidelity.Observation:
        scratch.queue("falls-over")
        raise RuntimeError("emulator fell over")

    feature = Feature("test.falls_over", "A probe that fails half way", aws="-", workaround="-")
    monkeypatch.setattr(fidelity.probes, "PROBES", [Probe((feature,), falls_over)])

    finding = probe(moto_backend, refresh=True).get("test.falls_over")

    assert finding.observed == "probe failed: RuntimeError: emulator fell over"
    assert finding.matches_aws is False
    assert leftovers(moto_backend) == NO_LEFTOVERS
    assert not fidelity.cache_path(moto_backend).exists()
    assert "not caching the moto fidelity table: test.falls_over: probe failed: RuntimeError" in caplog.text


# --------------------------------------------------------------------------- memo and cache


def test_cache_is_written_and_read_back_without_probing(
    probed: dict[str, Probed], fleetlab_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEETLAB_HOME", str(fleetlab_home))
    calls, measure = stand_in_measure(())
    monkeypatch.setattr(fidelity.probes, "measure", measure)
    backend = open_backend("moto")
    try:
        path = fidelity.cache_path(backend)
        table = probe(backend)
    finally:
        backend.close()
    assert path == fleetlab_home / f"fidelity-moto-{backend.details['version']}.json"
    assert table == probed["moto"].table
    assert calls == []


def test_session_memo_outlives_the_cache_and_refresh_measures_again(
    probed: dict[str, Probed], moto_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, measure = stand_in_measure(probed["moto"].table.findings)
    monkeypatch.setattr(fidelity.probes, "measure", measure)
    path = fidelity.cache_path(moto_backend)

    first = probe(moto_backend)
    assert path.exists()
    path.unlink()
    assert probe(moto_backend) is first
    assert len(calls) == 1

    probe(moto_backend, refresh=True)
    assert len(calls) == 2
    assert path.exists()


def test_cache_from_another_probe_set_is_ignored(
    probed: dict[str, Probed], moto_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = replace(probed["moto"].table, versions={**probed["moto"].table.versions, "probes": "0ld"})
    path = fidelity.cache_path(moto_backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stale.to_dict()))
    calls, measure = stand_in_measure(probed["moto"].table.findings)
    monkeypatch.setattr(fidelity.probes, "measure", measure)

    table = probe(moto_backend)

    assert calls == [moto_backend]
    assert table.versions["probes"] != "0ld"


def test_a_cache_measured_before_the_observations_were_reworded_is_ignored(
    probed: dict[str, Probed], moto_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fleetlab.backends.fidelity import cache

    current = cache._OBSERVATIONS_REVISION
    cache._OBSERVATIONS_REVISION = current - 1
    try:
        earlier_fingerprint = cache._probe_set_fingerprint()
    finally:
        cache._OBSERVATIONS_REVISION = current
    assert earlier_fingerprint != cache._probe_set_fingerprint()
    earlier = replace(probed["moto"].table, versions={**probed["moto"].table.versions, "probes": earlier_fingerprint})
    path = fidelity.cache_path(moto_backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(earlier.to_dict()))
    calls, measure = stand_in_measure(probed["moto"].table.findings)
    monkeypatch.setattr(fidelity.probes, "measure", measure)

    probe(moto_backend)

    assert calls == [moto_backend]


def test_aws_is_the_reference_and_is_never_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))

    def refuse(service: str, config: object) -> None:
        raise AssertionError(f"the aws table must not call {service}")

    table = probe(Backend(name="aws", region="us-east-1", clock=RealClock(), make_client=refuse))

    assert table.divergences() == ()
    assert {f.observed for f in table.findings} == {"AWS itself"}
    assert tuple(f.feature for f in table.findings) == fidelity.feature_ids()
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- the table's API


def test_table_round_trips_through_json(probed: dict[str, Probed]) -> None:
    table = probed["moto-server"].table
    assert FidelityTable.from_dict(json.loads(json.dumps(table.to_dict()))) == table


def test_from_dict_names_the_malformed_field() -> None:
    with pytest.raises(ConfigError, match="'findings'"):
        FidelityTable.from_dict({"backend": "moto", "versions": {}, "findings": "none"})


def test_get_unknown_feature_names_it_and_the_known_ones(probed: dict[str, Probed]) -> None:
    with pytest.raises(ConfigError, match=r"'nope'.*sqs\.redrive_receive"):
        probed["moto"].table.get("nope")


def test_diverges_and_divergences_agree(probed: dict[str, Probed]) -> None:
    table = probed["moto"].table
    diverging = [f.feature for f in table.divergences()]
    assert diverging == [f.feature for f in table.findings if table.diverges(f.feature)]
    assert "stepfunctions.heartbeat_timeout_error" in diverging
    assert "sqs.redrive_receive" not in diverging


def test_markdown_has_one_row_per_feature_and_says_not_probed(probed: dict[str, Probed]) -> None:
    text = fidelity.render_markdown(
        {"moto": probed["moto"].table, "moto-server": probed["moto-server"].table, "LocalStack": None}
    )
    lines = text.splitlines()
    rows = [line for line in lines if line.startswith("| ") and "`" in line]
    assert lines[0] == "| feature | AWS | moto | moto-server | LocalStack |"
    assert len(rows) == len(fidelity.feature_ids())
    assert all(row.endswith("| not probed |") for row in rows)
    assert "- `sqs.move_task_to_source` (moto, moto-server): fleetlab redrives" in text


def test_single_table_markdown_and_rich_rendering(probed: dict[str, Probed]) -> None:
    table = probed["moto"].table
    assert table.to_markdown().splitlines()[0] == "| feature | AWS | moto |"
    rich_table = table.to_rich()
    assert isinstance(rich_table, Table)
    assert rich_table.row_count == len(table.findings)
    assert [c.header for c in rich_table.columns] == ["feature", "AWS", "moto", "workaround"]


# --------------------------------------------------------------------------- the generator


def test_generator_writes_the_doc_and_skips_unreachable_localstack(
    probed: dict[str, Probed], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))
    monkeypatch.setenv("LOCALSTACK_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    calls, measure = stand_in_measure(probed["moto"].table.findings)
    monkeypatch.setattr(fidelity.probes, "measure", measure)
    out = tmp_path / "docs" / "fidelity.md"

    assert fidelity_doc.main(["--out", str(out), "--backends", "moto,localstack"]) == 0

    text = out.read_text()
    assert text.startswith("# Fidelity")
    assert "| feature | AWS | moto | moto-server | LocalStack |" in text
    redrive = next(line for line in text.splitlines() if "`sqs.redrive_receive`" in line)
    assert redrive.endswith("| ✓ receive 4 finds it in the DLQ (receives 1-3 delivered it) | not probed | not probed |")
    assert len(calls) == 1


def test_generator_refuses_to_probe_aws(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        fidelity_doc.main(["--backends", "moto,aws"])
    assert exit_info.value.code == 2
    assert "aws is the reference column" in capsys.readouterr().err


def test_a_shared_cache_folder_wins_over_the_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLEETLAB_FIDELITY_CACHE", str(tmp_path / "shared"))
    backend = open_backend("moto")
    try:
        assert fidelity.cache_path(backend).parent == tmp_path / "shared"
    finally:
        backend.close()

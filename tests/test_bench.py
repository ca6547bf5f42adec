"""Behaviour of ``fleetlab bench``: what it measures and records, never how fast anything is."""

from __future__ import annotations

import json

import nbformat
import pytest
from fleetlab_instructor import bench

from fleetlab.backends.backend import open_backend
from fleetlab.cli import build_cli, main
from fleetlab.composition.topology import AgentClass, TopologySpec
from fleetlab.services.state.idempotency import COMPLETED, Completed, IdempotencyStore

ONE_STEP = ["sqs.ReceiveMessage > dynamodb.PutItem > dynamodb.PutItem > sqs.DeleteMessage"]


def parsed(*flags: str) -> dict:
    """What ``fleetlab bench FLAGS`` parses to, without running it."""
    return build_cli().commands["bench"].make_context("bench", list(flags)).params


def test_the_library_and_raw_paths_make_the_same_boto3_calls():
    result = bench.library_overhead("moto", blocks=2, per_block=3)
    assert result["library_ms_per_step"] > 0 and result["raw_ms_per_step"] > 0
    assert result["cpu_ms_per_step"]["library"] > 0 and result["cpu_ms_per_step"]["raw"] > 0
    assert result["calls_per_step"] == {"library": ONE_STEP, "raw": ONE_STEP}
    steps = (1 + 2) * 3  # a warm-up block and two timed blocks of three steps per path
    assert result["boto3_calls"] == {"library": 4 * steps, "raw": 4 * steps}
    assert result["same_calls"] and not result["error"]
    assert result["ratio"] == pytest.approx(result["library_ms_per_step"] / result["raw_ms_per_step"])
    assert len(result["block_medians_ms"]["library"]) == len(result["block_medians_ms"]["raw"]) == 2
    names = {r["measurement"] for r in result["rows"]}
    assert {"library overhead A/B, wall", "library overhead A/B, CPU time"} <= names


def test_the_call_counter_sees_each_call_and_unhooks_on_exit():
    backend = open_backend("moto")
    try:
        sqs = backend.client("sqs")
        counter = bench.CallCounter(sqs)
        with counter:
            counter.mark()
            sqs.list_queues()
            sqs.create_queue(QueueName="counted")
            assert counter.since_mark() == (("sqs", "ListQueues"), ("sqs", "CreateQueue"))
            assert counter.seconds_since_mark() > 0
        sqs.list_queues()
        assert len(counter.calls) == 2
    finally:
        backend.close()


def test_a_raw_step_leaves_the_record_the_library_would():
    spec = TopologySpec(agent_classes=(AgentClass("researcher"),), orchestrator=False)
    with bench.provisioned("moto", "rawtest", spec) as (backend, topology):
        sqs, ddb = backend.client("sqs"), backend.client("dynamodb")
        queue = topology.queue("researcher")
        bench.send_bodies(sqs, queue.url, [bench.overhead_body("raw-1", "researcher")])
        step = lambda: bench.raw_step(sqs, ddb, queue.url, topology.table_name, "researcher", clock=backend.clock)
        assert step() == 1
        assert step() == 0  # the queue is empty
        store = IdempotencyStore(ddb, topology.table_name, backend.clock)
        assert store.record("raw-1", "researcher")["status"] == COMPLETED
        assert isinstance(store.claim("raw-1", "researcher"), Completed)


def test_a_run_saves_json_with_timestamp_machine_and_rows(tmp_path, capsys):
    out = tmp_path / "new" / "folder" / "results.json"
    assert main(["bench", "--backends", "moto", "--steps", "10", "--only", "pipeline,clock", "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert {"timestamp", "machine", "settings", "results", "rows"} <= set(saved)
    assert {"cpu_count", "python"} <= set(saved["machine"])
    assert {"moto", "boto3"} <= set(saved["machine"]["packages"])
    assert saved["settings"] == {"backends": ["moto"], "steps": 10, "only": ["pipeline", "clock"]}
    by_name = {r["name"]: r for r in saved["results"]}
    assert by_name["pipeline"]["done"] == 10 and by_name["pipeline"]["steps_per_s"] > 0
    assert by_name["clock"]["simulated_seconds"] > 100 and by_name["clock"]["wall_seconds"] > 0  # 10 steps, p50 90 s
    assert by_name["fleet-day"]["measured"] is True and by_name["fleet-day"]["simulated_seconds"] == 86_400
    for line in saved["rows"]:
        assert set(line) == {"measurement", "backend", "value", "unit", "goal", "met", "note"}
    text = capsys.readouterr().out
    assert "pipeline steps/s (drain)" in text and "simulated fleet day" in text
    assert f"saved {out}" in " ".join(text.split())


@pytest.mark.parametrize("flag, value", [("--backends", "moto,nope"), ("--only", "overhead,speed"), ("--steps", "0")])
def test_bad_flags_are_rejected_naming_the_flag(flag, value, capsys):
    assert main(["bench", flag, value]) == 2
    err = capsys.readouterr().err
    assert f"'{flag}'" in err
    assert value.split(",")[-1] in err


def test_defaults_and_lists_parse():
    params = parsed()
    assert params["backends"] == ("moto", "moto-server") and params["steps"] == 200
    assert str(params["out"]) == "bench/results.json" and params["only"] == bench.MEASUREMENTS
    params = parsed("--backends", "moto-server, moto", "--only", "demo")
    assert params["backends"] == ("moto-server", "moto") and params["only"] == ("demo",)


def test_the_plan_follows_only_and_backends():
    labels = [label for label, _ in bench.measurement_plan(("overhead", "labs"), ("moto", "moto-server"), 40)]
    assert labels == ["overhead on moto", "overhead on moto-server", "lab notebooks"]


def test_the_demo_runs_in_process_with_its_output_captured(capsys):
    result = bench.demo_wall_time("moto", events=2, orchestrated=0)
    assert result["exit_code"] == 0 and not result["error"]
    assert result["wall_seconds"] > 0 and result["output_chars"] > 0
    assert capsys.readouterr().out == ""


def test_the_fleet_day_runs_a_keda_sized_fleet_through_the_model():
    result = bench.simulated_fleet_day(hours=2)
    assert result["measured"] is True and not result["error"] and result["wall_seconds"] > 0
    sized = result["scaled_object"]
    assert sized == {"queue_length": 10, "min_replicas": 2, "max_replicas": 1350}  # 11,250 in flight x 1.2 / 10
    figures = result["figures"]
    assert 1_125 <= figures["peak_replicas"] <= sized["max_replicas"]  # enough pods for 11,250 steps at 10 each
    # 125 steps/s for 2 h, less the 22.5 min it takes the first conversations to reach step 15
    assert 125 * 7200 * 0.8 < figures["steps_completed"] < 125 * 7200
    first = result["rows"][0]
    assert first["goal"] == "" and first["met"] is None  # the 5 s goal is for a full day only


def test_lab_goals_follow_the_course_targets(tmp_path):
    assert [bench.lab_goal(tmp_path / n) for n in ("00_orientation.ipynb", "04_wait.ipynb", "07_capstone.ipynb")] == [
        20.0, 30.0, 45.0]


def test_notebooks_are_timed_and_a_failing_one_is_reported(tmp_path):
    good, bad = tmp_path / "01_good.ipynb", tmp_path / "02_bad.ipynb"
    for path, source in ((good, "import os\nprint(os.environ['FLEETLAB_BACKEND'])"), (bad, "raise ValueError('boom')")):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), path)
    result = bench.lab_run_times([good, bad], timeout=60)
    first, second = result["runs"]
    assert first["error"] == "" and first["wall_seconds"] > 0 and first["slowest_cells"][0]["cell"] == 0
    assert "boom" in second["error"]
    bad_rows = [r for r in result["rows"] if r["measurement"].startswith("lab 02_bad.ipynb")]
    assert [r["met"] for r in bad_rows] == [False, False, False]  # a notebook that raises never meets its goals


def test_a_labs_first_cell_is_reported_cold_then_warm_with_the_table_measured_between(tmp_path):
    lab = tmp_path / "00_first.ipynb"
    cells = ['import fleetlab\nlab = fleetlab.start("00")',
             "from fleetlab.backends.fidelity.cache import cached\nassert cached(lab.backend) is not None"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), lab)
    result = bench.lab_run_times([lab], timeout=120)
    (run,) = result["runs"]
    assert run["error"] == ""  # the whole run found the table the cold first cell had measured in the background
    assert run["first_cell"]["warm_seconds"] == run["first_cell_seconds"] and run["first_cell"]["cold_seconds"] > 0
    first_cell_rows = {r["measurement"]: r for r in result["rows"] if "first cell" in r["measurement"]}
    assert list(first_cell_rows) == ["lab 00_first.ipynb first cell, fidelity cache warm",
                                     "lab 00_first.ipynb first cell, fidelity cache cold"]
    assert {r["goal"] for r in first_cell_rows.values()} == {"<= 2 s"}


def test_a_notebook_whose_cell_overruns_is_stopped_and_named(tmp_path):
    slow = tmp_path / "03_slow.ipynb"
    cells = ["x = 1", "import time\ntime.sleep(600)", "print('never')"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), slow)
    result = bench.lab_run_times([slow], timeout=3)
    (run,) = result["runs"]
    assert run["error"] == "cell 1: timed out after 3 s"
    assert 3 <= run["slowest_cells"][0]["seconds"] < 30 and run["slowest_cells"][0]["cell"] == 1
    assert [c["cell"] for c in run["slowest_cells"]] == [1, 0]  # the cell after the overrun never ran
    assert result["rows"][0]["met"] is False and result["rows"][0]["note"] == run["error"]


def test_a_broken_measurement_is_recorded_not_raised():
    def explode() -> dict:
        raise RuntimeError("no luck")

    result = bench.guarded("exploding", explode)
    assert "RuntimeError: no luck" in result["error"]
    assert result["rows"][0]["value"] is None


def test_course_total_adds_the_solution_labs_and_their_share_of_grading():
    from fleetlab_instructor.bench import course_total

    labs = {"name": "labs", "error": "", "runs": [
        {"notebook": "labs/solutions/00_orientation.ipynb", "wall_seconds": 10.0},
        {"notebook": "labs/solutions/01_at_least_once.ipynb", "wall_seconds": 15.0},
        {"notebook": "labs/00_orientation.ipynb", "wall_seconds": 9.0},
    ]}
    grade = {"name": "grade", "error": "", "wall_seconds": 40.0, "notebooks": 8, "distinct_notebooks": 4,
             "solution_notebooks": 2}  # 2 solutions and 2 student notebooks, each graded twice: 5 s each
    (total,) = course_total([labs, grade])
    assert total["rows"][0]["value"] == 10.0 + 15.0 + 40.0 * 2 / 8
    assert course_total([labs, {**grade, "error": "boom"}]) == []


def test_the_chaos_day_bench_reports_its_counts_and_holds_every_invariant():
    result = bench.chaos_day("moto", steps=40)
    assert result["measured"] is True and result["error"] == "" and result["wall_seconds"] > 0
    figures = result["figures"]
    assert figures["accepted"] == 40 and figures["lost"] == figures["duplicated"] == figures["hung"] == 0
    assert figures["parked"] == 5 and figures["traced"] == 40 and figures["api_calls_per_step"] > 0
    assert result["rows"][0]["goal"] == "" and result["rows"][0]["met"] is None  # the 60 s goal is for 10,000 steps


def test_the_machines_cpu_counts_a_child_process_that_getrusage_of_ours_would_not_see():
    import subprocess
    import sys

    from fleetlab_instructor.bench.notebooks import machine_cpu_seconds

    before = machine_cpu_seconds()
    spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 1\n"
                             "while time.process_time() < end: pass"], start_new_session=True)
    spin.wait(timeout=60)
    assert machine_cpu_seconds() - before >= 0.9  # the child's second of CPU, whoever else ran meanwhile

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import time_machine

from fleetlab.cli import main
from fleetlab.course.grading import progress
from fleetlab.course.grading.results import CheckResult, CheckStatus


def result(check_id="00.planes", status=CheckStatus.PASS, points=1.0, grader_adds=0):
    return CheckResult(check_id, "Name the three planes", status, points, 1, "", grader_adds=grader_adds)


def public_pass():
    return result(status=CheckStatus.PUBLIC_PASS, points=None, grader_adds=4)


def test_results_are_recorded_as_json_under_fleetlab_home(fleetlab_home):
    progress.record(result(status=CheckStatus.FAIL, points=None))
    progress.record(result())
    data = json.loads((fleetlab_home / "progress.json").read_text())
    entry = data["checks"]["00.planes"]
    assert (entry["status"], entry["points"], entry["attempts"]) == ("pass", 1, 2)
    assert sorted(p.name for p in fleetlab_home.iterdir()) == ["progress.json", "progress.lock"]  # no temp files left


def test_a_notebook_pass_is_recorded_as_a_public_pass_without_points():
    progress.record(public_pass())
    [row] = progress.rows("00")
    assert (row.status, row.points, row.grader_adds) == ("public pass", None, 4)
    assert row.label == "public cases pass (the grader adds 4 more)"
    assert row.score == "–/1"


def test_recorded_times_are_wall_time_even_while_a_lab_clock_is_days_ahead():
    before = datetime.now(UTC).replace(microsecond=0)
    with time_machine.travel(datetime.now(UTC) + timedelta(days=3), tick=True):
        progress.record(result())
    recorded = datetime.fromisoformat(progress.load()["00.planes"]["at"])
    assert before <= recorded <= datetime.now(UTC)


def test_concurrent_records_are_all_kept():
    ids = [f"97.check-{n}" for n in range(12)]
    threads = [threading.Thread(target=progress.record, args=(result(check_id),)) for check_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert set(ids) <= set(progress.load())


def test_another_kernel_cannot_take_the_lock_while_a_result_is_recorded(fleetlab_home):
    try_lock = ("import sys, filelock\n"
                "try:\n    filelock.FileLock(sys.argv[1]).acquire(timeout=0)\n"
                "except filelock.Timeout:\n    sys.exit(3)\n")
    with progress._locked():
        held = subprocess.run([sys.executable, "-c", try_lock, str(fleetlab_home / "progress.lock")], timeout=60)
    assert held.returncode == 3
    free = subprocess.run([sys.executable, "-c", try_lock, str(fleetlab_home / "progress.lock")], timeout=60)
    assert free.returncode == 0


def test_progress_is_saved_where_there_is_no_fcntl(fleetlab_home):
    """As on Windows: the lock comes from filelock, never from fcntl."""
    record = ("import sys\nsys.modules['fcntl'] = None  # importing it now fails, as on Windows\n"
              "from fleetlab.course.grading import progress\n"
              "from fleetlab.course.grading.results import CheckResult, CheckStatus\n"
              "progress.record(CheckResult('00.planes', 'Name the three planes', CheckStatus.PASS, 1.0, 1, ''))\n")
    subprocess.run([sys.executable, "-W", "ignore::UserWarning", "-c", record], check=True, timeout=120)
    assert progress.load()["00.planes"]["status"] == "pass"


def test_rows_list_every_check_of_a_lab_run_or_not():
    [row] = progress.rows("00")
    assert (row.id, row.status, row.points, row.max_points, row.label) == ("00.planes", "", None, 1, "not run")
    progress.record(result())
    [row] = progress.rows("00")
    assert (row.status, row.points, row.score) == ("pass", 1, "1/1")
    assert "00" in progress.labs()


def test_an_unreadable_file_starts_afresh(fleetlab_home):
    fleetlab_home.mkdir(parents=True)
    (fleetlab_home / "progress.json").write_text("{not json")
    assert progress.load() == {}
    progress.record(result())
    assert progress.load()["00.planes"]["status"] == "pass"


def test_the_widget_shows_a_lab_and_refreshes_after_each_check():
    from fleetlab.course.grading import progress_widget

    widget = progress_widget("00")
    assert "00.planes" in widget.table.value and "not run" in widget.table.value
    progress.record(public_pass())
    assert "◐" in widget.table.value and "public cases pass (the grader adds 4 more)" in widget.table.value
    assert "–/1" in widget.table.value
    progress.record(result())
    assert "✓" in widget.table.value and "1/1" in widget.table.value


def test_the_progress_command_shows_a_public_pass_as_such(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per check
    progress.record(public_pass())
    assert main(["progress", "--lab", "00"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "◐" in out and "public cases pass" in out and "–/1" in out

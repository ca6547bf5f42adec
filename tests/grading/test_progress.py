import json
import threading

from fleetlab.grading import progress
from fleetlab.grading.results import CheckResult


def result(check_id="00.planes", status="pass", points=1):
    return CheckResult(check_id, "Name the three planes", status, points, 1, "")


def test_results_are_recorded_as_json_under_fleetlab_home(fleetlab_home):
    progress.record(result(status="fail", points=0))
    progress.record(result())
    data = json.loads((fleetlab_home / "progress.json").read_text())
    entry = data["checks"]["00.planes"]
    assert (entry["status"], entry["points"], entry["attempts"]) == ("pass", 1, 2)
    assert sorted(p.name for p in fleetlab_home.iterdir()) == ["progress.json", "progress.lock"]  # no temp files left


def test_concurrent_records_are_all_kept():
    ids = [f"97.check-{n}" for n in range(12)]
    threads = [threading.Thread(target=progress.record, args=(result(check_id),)) for check_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert set(ids) <= set(progress.load())


def test_rows_list_every_check_of_a_lab_run_or_not():
    [row] = progress.rows("00")
    assert (row.id, row.status, row.points, row.max_points) == ("00.planes", "", 0, 1)
    progress.record(result())
    [row] = progress.rows("00")
    assert (row.status, row.points) == ("pass", 1)
    assert "00" in progress.labs()


def test_an_unreadable_file_starts_afresh(fleetlab_home):
    fleetlab_home.mkdir(parents=True)
    (fleetlab_home / "progress.json").write_text("{not json")
    assert progress.load() == {}
    progress.record(result())
    assert progress.load()["00.planes"]["status"] == "pass"


def test_the_widget_shows_a_lab_and_refreshes_after_each_check():
    from fleetlab.grading import progress_widget

    widget = progress_widget("00")
    assert "00.planes" in widget.table.value and "not run" in widget.table.value
    progress.record(result())
    assert "✓" in widget.table.value and "1/1" in widget.table.value

import csv

from fleetlab_instructor.grading.grade import GradeRow
from fleetlab_instructor.grading.gradebook import write_csv


def test_a_folder_of_several_labs_leaves_foreign_checks_blank(tmp_path):
    rows = [
        GradeRow("00_orientation.ipynb", {"00.planes": 1.0}, {"00.planes": 1.0}, ""),
        GradeRow("02_idempotency_keys.ipynb", {"02.window": 0.0}, {"02.window": 2.0}, ""),
    ]
    path = tmp_path / "grades.csv"
    write_csv(rows, path)
    assert list(csv.reader(path.open())) == [
        ["notebook", "00.planes", "02.window", "total", "error"],
        ["00_orientation.ipynb", "1", "", "1", ""],
        ["02_idempotency_keys.ipynb", "", "0", "0", ""],
    ]

"""Sharded grading: learner ids, ``--shard I/N``, and shards whose merged gradebook is the unsharded one."""

from __future__ import annotations

import csv
import html
import io
import os
import re
from pathlib import Path

import nbformat
import pytest
from fleetlab_instructor.checks.lab00 import planes
from fleetlab_instructor.grade import submissions
from fleetlab_instructor.report.feedback import FITTED
from fleetlab_instructor.grade.submissions import (LEARNER_CONVENTION, NOT_A_FILE, Shard, Unreadable, learner_file_name,
                                                     parse_shard, read_notebook, shard_of, take_in)
from nbformat.v4 import new_code_cell, new_notebook

from fleetlab.cli import main
from fleetlab.core.errors import InvalidInput

LEARNERS = ["zoe", "ann", "bob.b", "cy-2", "dee_d", "eve", "fay"]


def empty_notebooks(root: Path, names: list[str]) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")


@pytest.mark.parametrize(("text", "shard"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3/3 ", Shard(3, 3))])
def test_a_shard_is_i_of_n(text, shard):
    assert parse_shard(text) == shard


@pytest.mark.parametrize(("text", "says"), [
    ("0/3", "I must be from 1 to 3"), ("4/3", "I must be from 1 to 3"), ("a/b", "not I/N"),
    ("1/0", "N must be at least 1"), ("1", "not I/N"), ("-1/3", "not I/N"),
])
def test_a_bad_shard_is_refused_naming_the_flag(text, says):
    with pytest.raises(InvalidInput, match=says) as raised:
        parse_shard(text)
    assert raised.value.field == "--shard"


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "1/0"])
def test_the_command_refuses_a_bad_shard_with_exit_status_2(tmp_path, capsys, text):
    assert main(["grade", str(tmp_path), "--shard", text]) == 2
    err = capsys.readouterr().err
    assert "Invalid value for '--shard'" in err and text in err


def test_the_learner_id_comes_from_the_file_name_or_the_learner_folder(tmp_path):
    empty_notebooks(tmp_path, ["alice_01_at_least_once.ipynb", "mary_jo_03_poison_and_dlq.ipynb",
                               "h.o+x@example.org_02_idempotency_keys.ipynb", "bob/01_at_least_once.ipynb",
                               "h.o@example.org/01_at_least_once.ipynb", "Jo Ann (TA)/00_orientation.ipynb"])
    intake = take_in([tmp_path])
    assert [(sub.learner, sub.lab) for sub in intake.submissions] == [
        ("Jo Ann (TA)", "00"), ("alice", "01"), ("bob", "01"), ("h.o+x@example.org", "02"), ("h.o@example.org", "01"),
        ("mary_jo", "03")]
    assert intake.notes == []


def notes_of(intake, root: Path) -> dict[str, str]:
    return {str(note.path.relative_to(root)): note.says for note in intake.notes}


def test_a_stray_file_is_left_out_with_a_note_and_the_rest_is_graded(tmp_path):
    empty_notebooks(tmp_path, [
        "grace/03_poison_and_dlq.ipynb", "grace/03_poison_and_dlq-Copy1.ipynb", "grace/Untitled.ipynb",
        "grace/old/03_poison_and_dlq.ipynb", "grace/bob_01_at_least_once.ipynb", "grace/notes.txt",
        "grace/.ipynb_checkpoints/03_poison_and_dlq-checkpoint.ipynb",
        "dan_02_idempotency_keys.ipynb", "dan/02_idempotency_keys.ipynb", "Untitled.ipynb", "01_at_least_once.ipynb",
        "dan/42_my_notes.ipynb",
        ".trash/ann/01_at_least_once.ipynb", "outside/03_poison_and_dlq.ipynb",
    ])
    room = tmp_path / "room"
    for moved in ("grace", "dan", "dan_02_idempotency_keys.ipynb", "Untitled.ipynb", "01_at_least_once.ipynb",
                  ".trash"):
        room.mkdir(exist_ok=True)
        (tmp_path / moved).rename(room / moved)
    (room / "eve").mkdir()
    (room / "eve" / "03_poison_and_dlq.ipynb").symlink_to(tmp_path / "outside" / "03_poison_and_dlq.ipynb")
    (room / "eve_01_at_least_once.ipynb").symlink_to(room / "grace" / "03_poison_and_dlq.ipynb")
    os.mkfifo(room / "grace" / "02_idempotency_keys.ipynb")
    intake = take_in([room])
    assert [(str(sub.path.relative_to(room)), sub.learner, sub.lab) for sub in intake.submissions] == [
        ("dan/02_idempotency_keys.ipynb", "dan", "02"),
        ("grace/bob_01_at_least_once.ipynb", "grace", "01"),  # the folder names its owner
        ("grace/03_poison_and_dlq.ipynb", "grace", "03"),  # the copy is not graded
    ]
    assert notes_of(intake, room) == {
        ".trash": "a hidden folder, or one named with control characters: no learner's, not graded",
        "01_at_least_once.ipynb": f"names no learner: not graded ({LEARNER_CONVENTION})",
        "Untitled.ipynb": f"names no learner: not graded ({LEARNER_CONVENTION})",
        "dan/42_my_notes.ipynb": "names lab 42, which this course has no checks for: not graded (its labs: 00, 01, "
                                 "02, 03, 04, 05, 06, 07)",
        "dan_02_idempotency_keys.ipynb": f"a second notebook of lab 02 for dan: not graded "
                                         f"({str(room / 'dan/02_idempotency_keys.ipynb')!r} is; keep one notebook "
                                         f"per lab)",
        "eve/03_poison_and_dlq.ipynb": NOT_A_FILE["link"],
        "eve_01_at_least_once.ipynb": NOT_A_FILE["link"],
        "grace/02_idempotency_keys.ipynb": NOT_A_FILE["other"],
        "grace/03_poison_and_dlq-Copy1.ipynb": f"a Jupyter copy of lab 03 for grace: not graded "
                                               f"({str(room / 'grace/03_poison_and_dlq.ipynb')!r} is; keep one "
                                               f"notebook per lab)",
        "grace/Untitled.ipynb": "names no lab: not graded (a notebook's name starts with its lab, NN_: rename it as "
                                "the lab's notebook, e.g. 01_at_least_once.ipynb)",
        "grace/bob_01_at_least_once.ipynb": "named for learner 'bob' but found in grace's folder: graded as grace's",
        "grace/old": "a folder inside grace's folder: not graded (a learner's notebooks sit directly in their "
                     "folder; move one up to grade it)",
    }


def test_of_two_notebooks_of_a_lab_the_one_named_as_the_room_named_it_is_graded(tmp_path):
    empty_notebooks(tmp_path, ["ann/03_a_draft.ipynb", "ann/03_poison_and_dlq.ipynb", "bob/03_poison_and_dlq.ipynb",
                               "cy_03_poison_and_dlq.ipynb", "dee/03_b.ipynb", "dee/03_a.ipynb"])
    intake = take_in([tmp_path])
    assert [str(sub.path.relative_to(tmp_path)) for sub in intake.submissions] == [
        "ann/03_poison_and_dlq.ipynb", "bob/03_poison_and_dlq.ipynb", "cy_03_poison_and_dlq.ipynb",
        "dee/03_a.ipynb"]  # no name of dee's is the room's: the first by path
    assert [(str(note.path.relative_to(tmp_path)), note.says.split(":")[0]) for note in intake.notes] == [
        ("ann/03_a_draft.ipynb", "a second notebook of lab 03 for ann"),
        ("dee/03_b.ipynb", "a second notebook of lab 03 for dee")]


def test_a_lone_jupyter_copy_is_graded_and_a_file_named_twice_is_one_submission(tmp_path):
    empty_notebooks(tmp_path, ["ann/01_at_least_once-Copy2.ipynb"])
    intake = take_in([tmp_path, tmp_path / "ann" / "01_at_least_once-Copy2.ipynb"])
    assert [(sub.learner, sub.lab) for sub in intake.submissions] == [("ann", "01")] and intake.notes == []


def test_a_path_named_that_is_neither_notebook_nor_folder_is_a_usage_error(tmp_path):
    (tmp_path / "grades.txt").write_text("")
    with pytest.raises(InvalidInput, match="neither a notebook nor a folder") as raised:
        take_in([tmp_path / "grades.txt"])
    assert raised.value.field == "PATH"


def test_intake_and_reading_never_open_a_fifo_or_follow_a_link(tmp_path, monkeypatch):
    os.mkfifo(fifo := tmp_path / "ann_01_at_least_once.ipynb")
    (link := tmp_path / "bob_01_at_least_once.ipynb").symlink_to(tmp_path / "elsewhere.ipynb")
    (tmp_path / "elsewhere.ipynb").write_text("{}")
    opened = []

    def refuse(path, *args, **kwargs):  # opening the FIFO would block: fail instead of hanging
        opened.append(str(path))
        raise AssertionError(f"opened {path}")

    monkeypatch.setattr(submissions.os, "open", refuse)
    monkeypatch.setattr(io, "open", refuse)
    assert str(read_notebook(fifo)) == NOT_A_FILE["other"]
    assert str(read_notebook(link)) == NOT_A_FILE["link"]
    assert take_in([fifo, link]).submissions == []
    assert opened == []


def notebook_bytes() -> bytes:
    return nbformat.writes(new_notebook(cells=[new_code_cell("x = 1")])).encode()


@pytest.mark.parametrize(("data", "says"), [
    (notebook_bytes().replace(b"x = 1", b"x = \xff1"), r"not UTF-8 text \(byte 0xff at offset \d+\)"),
    (b"<html>a download page</html>", r"not JSON \(Expecting value: line 1 column 1"),
    (b'{"cells": 3}', r"the file is JSON but no Jupyter notebook"),
    (b"[]", r"the file is JSON but no Jupyter notebook"),
])
def test_a_file_that_is_no_notebook_is_read_as_a_clear_error(tmp_path, data, says):
    (path := tmp_path / "ann_01_at_least_once.ipynb").write_bytes(data)
    said = read_notebook(path)
    assert isinstance(said, Unreadable) and re.search(says, str(said)) and "save it again" in str(said)


def test_a_notebook_reads_as_its_text_and_one_too_heavy_is_never_read(tmp_path, monkeypatch):
    (path := tmp_path / "ann_01_at_least_once.ipynb").write_bytes(data := notebook_bytes())
    assert read_notebook(path) == data.decode()
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_BYTES", 10)
    assert "over the 0 MB a notebook may: clear its outputs" in str(read_notebook(path))


@pytest.mark.parametrize(("learner", "name"), [
    ("h.o@example.org", "h.o@example.org.md"), ("../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd.md"),
    ("..", "%2E..md"), (".bashrc", "%2Ebashrc.md"), ("a/b", "a%2Fb.md"), ("a%2Fb", "a%252Fb.md"),
    ("Jo Ann", "Jo%20Ann.md"), ("x\ny", "x%0Ay.md"),
])
def test_a_learner_id_becomes_one_file_name_in_its_folder(tmp_path, learner, name):
    assert learner_file_name(learner, ".md") == name
    assert (tmp_path / name).resolve().parent == tmp_path.resolve()


@pytest.mark.parametrize("count", [1, 2, 3])
def test_the_shards_cover_every_submission_exactly_once(tmp_path, count):
    names = [f"{learner}_00_orientation.ipynb" for learner in LEARNERS] + ["ann/01_at_least_once.ipynb",
                                                                          "zoe_02_idempotency_keys.ipynb"]
    empty_notebooks(tmp_path, names)
    every = take_in([tmp_path]).submissions
    assert len(every) == 9
    shares = [shard_of(every, Shard(index, count)) for index in range(1, count + 1)]
    taken = [sub.path for share in shares for sub in share]
    assert sorted(taken) == sorted(sub.path for sub in every) and len(set(taken)) == len(taken)
    for share in shares:  # a learner's notebooks are all in one shard
        assert all(sub in share for sub in every if sub.learner in {mine.learner for mine in share})
    sizes = [len({sub.learner for sub in share}) for share in shares]
    assert max(sizes) - min(sizes) <= 1  # round robin over the sorted learner ids


def test_a_shard_does_not_depend_on_the_order_submissions_are_listed_in(tmp_path):
    empty_notebooks(tmp_path, [f"{learner}_00_orientation.ipynb" for learner in LEARNERS])
    every = take_in([tmp_path]).submissions
    assert [sub.learner for sub in every] == sorted(LEARNERS)
    listed_backwards = take_in(sorted(tmp_path.iterdir(), reverse=True)).submissions
    assert listed_backwards == every
    assert [sub.learner for sub in shard_of(every, Shard(2, 3))] == ["bob.b", "eve"]


# Six learners' notebooks of lab 00, small and fast: each checks one answer to 00.planes.
ANSWERS = {
    "ann": repr(dict(planes.REFERENCE)),  # every case passes: 1
    "bob": repr({k: v for k, v in planes.REFERENCE.items() if k != "claim-check bucket"}),  # one hidden case fails
    "cy": repr({**planes.REFERENCE, "state machine": "state"}),  # one public case fails
    "dee": "...",  # not yet
    "eve": repr({k: v for k, v in planes.REFERENCE.items() if k not in ("rules", "workers")}),  # two hidden fail
    "h.o@example.org": repr(dict(planes.REFERENCE)),  # a hub's e-mail user name: 1
}
FORMULA = "=SUM(1+1)"  # a learner folder whose name a spreadsheet would run; its notebook is not UTF-8
STRAYS = {"bob/Untitled.ipynb": "names no lab", "eve/00_orientation-Copy1.ipynb": "a Jupyter copy of lab 00 for eve",
          "zed_00_orientation.ipynb": "not a regular file (a FIFO",
          "bob/[red]x \\x1b[2J.ipynb": "names no lab"}  # rich markup and a terminal escape, shown as text


def planes_notebook(answer: str) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell("from fleetlab.course.grading import check"),
                               new_code_cell(f"planes = {answer}"), new_code_cell('check("00.planes", planes)')])


@pytest.fixture(scope="module")
def room(tmp_path_factory) -> Path:
    """The learners of ANSWERS (both naming conventions), FORMULA's broken notebook, and the STRAYS."""
    root = tmp_path_factory.mktemp("room")
    for learner, answer in ANSWERS.items():
        folder = root / learner if learner in ("bob", "eve", "h.o@example.org") else root
        folder.mkdir(exist_ok=True)
        nb = planes_notebook(answer)
        nbformat.write(nb, folder / ("00_orientation.ipynb" if folder != root else f"{learner}_00_orientation.ipynb"))
    (root / FORMULA).mkdir()
    (root / FORMULA / "00_orientation.ipynb").write_bytes(nbformat.writes(planes_notebook("1")).encode() + b"\xff")
    (root / "bob" / "Untitled.ipynb").write_text(nbformat.writes(planes_notebook("1")))
    (root / "bob" / "[red]x \x1b[2J.ipynb").write_text(nbformat.writes(planes_notebook("1")))
    (root / "eve" / "00_orientation-Copy1.ipynb").write_text(nbformat.writes(planes_notebook(ANSWERS["ann"])))
    os.mkfifo(root / "zed_00_orientation.ipynb")
    return root


@pytest.fixture(scope="module")
def unsharded(room, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("unsharded") / "grades.csv"
    with pytest.MonkeyPatch.context() as patch:
        printed = io.StringIO()
        patch.setattr("sys.stdout", printed)
        assert main(["grade", str(room), "--out", str(out), "--feedback", str(out.parent / "feedback"),
                     "--report", str(out.parent / "room.html")]) == 0
    return out, printed.getvalue()


def test_the_unsharded_gradebook_scores_each_learner_and_no_stray_sinks_it(unsharded):
    out, printed = unsharded
    with out.open(newline="") as file:
        rows = list(csv.reader(file))
    assert rows == [
        ["learner", "00.planes", "total"],
        ["Points Possible", "1", "1"],
        ["'" + FORMULA, "0", "0"],  # escaped: a spreadsheet shows it as text
        ["ann", "1", "1"],
        ["bob", "0.875", "0.875"],
        ["cy", "0.875", "0.875"],
        ["dee", "0", "0"],
        ["eve", "0.75", "0.75"],  # its -Copy1, a right answer, is not graded
        ["h.o@example.org", "1", "1"],
    ]
    said = (out.parent / "feedback" / "%3DSUM%281+1%29.md").read_text()
    assert "Problems while grading: the notebook is not UTF-8 text (byte 0xff at offset" in said
    page = (out.parent / "room.html").read_text()
    for stray, says in STRAYS.items():
        assert re.search(rf"not graded as found: \S*{re.escape(stray)}: {re.escape(says)}", printed)
        assert says in page and html.escape(stray) in page
    assert "\x1b" not in printed and "\x1b" not in page
    assert "graded 6 notebooks in" in printed and "4 files not graded as found (above)" in printed


def test_the_merged_shards_are_the_unsharded_gradebook_and_room_report(room, unsharded, tmp_path, capsys):
    out, _ = unsharded
    count = 2  # seven learners in two shards, of four and of three (each shard is a grading run of its own)
    shards = []
    for index in range(1, count + 1):
        argv = ["grade", str(room), "--shard", f"{index}/{count}", "--run", "day1", "--out",
                str(tmp_path / f"grades-{index}.csv"), "--feedback", str(tmp_path / "feedback")]
        assert main(argv) == 0
        shards.append(tmp_path / f"day1.shard-{index}-of-{count}.json")
        assert f"shard file: {shards[-1]}" in capsys.readouterr().out
    merged = tmp_path / "all.csv"
    assert main(["gradebook", "merge", *map(str, shards), "--out", str(merged), "--report",
                 str(tmp_path / "room.html")]) == 0
    assert merged.read_bytes() == out.read_bytes()
    assert sorted(path.name for path in (tmp_path / "feedback").iterdir()) == \
        sorted(path.name for path in (out.parent / "feedback").iterdir())
    assert (tmp_path / "feedback" / "bob.md").read_text() == (out.parent / "feedback" / "bob.md").read_text()
    assert without_plot((tmp_path / "room.html").read_text()) == without_plot((out.parent / "room.html").read_text())
    labels = "".join(f"<li>{html.escape(label)} <b>(1)</b></li>" for label in (
        "a hidden component missing", FITTED, "only the public four"))  # bob's key, eve's unnamed and keyed ones
    for page in ((tmp_path / "room.html").read_text(), (out.parent / "room.html").read_text()):
        assert f"<ol class='misconceptions'>{labels}</ol>" in page  # by each failed case's key, sharded or not


def without_plot(page: str) -> str:
    return re.sub(r"src='data:image/png;base64,[^']*'", "", page)


def test_merging_one_shard_of_two_fails_naming_the_missing_one(room, tmp_path, capsys):
    argv = ["grade", str(room / "ann_00_orientation.ipynb"), "--shard", "1/2", "--run", "day1", "--out",
            str(tmp_path / "grades-1.csv")]
    assert main(argv) == 0
    capsys.readouterr()
    merged = tmp_path / "all.csv"
    assert main(["gradebook", "merge", str(tmp_path / "day1.shard-1-of-2.json"), "--out", str(merged)]) == 2
    err = capsys.readouterr().err
    assert "run 'day1' lacks shard 2/2 (day1.shard-2-of-2.json): 1 of 2 given" in err
    assert "--shard I/2 --run day1" in err and not merged.exists()


def test_a_shard_needs_a_run_id(room, capsys):
    assert main(["grade", str(room), "--shard", "1/2"]) == 2
    assert "--run: is missing: --shard 1/2 needs the run's id" in capsys.readouterr().err
    assert main(["grade", str(room), "--shard", "1/2", "--run", "../up"]) == 2
    assert "Invalid value for '--run': is '../up', not a run id" in capsys.readouterr().err

"""Sharded grading: learner ids, ``--shard I/N``, and shards whose merged gradebook is the unsharded one."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest
from fleetlab_instructor.checks.lab00 import planes
from fleetlab_instructor.grading.submissions import Shard, find_submissions, learner_of, parse_shard, shard_of
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
    assert learner_of(Path("alice_01_at_least_once.ipynb")) == ("alice", "01")
    assert learner_of(Path("mary_jo_03_poison_and_dlq.ipynb")) == ("mary_jo", "03")
    assert learner_of(Path("room/alice/01_at_least_once.ipynb")) == ("alice", "01")
    for nameless in ("01_at_least_once.ipynb", "alice.ipynb", "alice_1_lab.ipynb", "_01_lab.ipynb"):
        with pytest.raises(InvalidInput, match="no learner id") as raised:
            learner_of(Path(nameless))
        assert "<learner>_<NN>_<lab>.ipynb" in str(raised.value)


def test_a_notebook_directly_in_the_folder_given_has_no_learner_folder(tmp_path):
    empty_notebooks(tmp_path, ["alice/01_at_least_once.ipynb", "01_at_least_once.ipynb"])
    with pytest.raises(InvalidInput, match="no learner id in .*01_at_least_once.ipynb"):
        find_submissions([tmp_path])
    assert main(["grade", str(tmp_path)]) == 2


def test_two_notebooks_of_one_lab_for_one_learner_are_refused(tmp_path):
    empty_notebooks(tmp_path, ["alice_01_at_least_once.ipynb", "alice/01_at_least_once.ipynb"])
    with pytest.raises(InvalidInput, match="learner 'alice' has two notebooks of lab 01"):
        find_submissions([tmp_path])


@pytest.mark.parametrize("count", [1, 2, 3])
def test_the_shards_cover_every_submission_exactly_once(tmp_path, count):
    names = [f"{learner}_00_orientation.ipynb" for learner in LEARNERS] + ["ann/01_at_least_once.ipynb",
                                                                          "zoe_02_idempotency_keys.ipynb"]
    empty_notebooks(tmp_path, names)
    every = find_submissions([tmp_path])
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
    every = find_submissions([tmp_path])
    assert [sub.learner for sub in every] == sorted(LEARNERS)
    listed_backwards = find_submissions(sorted(tmp_path.iterdir(), reverse=True))
    assert listed_backwards == every
    assert [sub.learner for sub in shard_of(every, Shard(2, 3))] == ["bob.b", "eve"]


# Five learners' notebooks of lab 00, small and fast: each checks one answer to 00.planes.
ANSWERS = {
    "ann": repr(dict(planes.REFERENCE)),  # every case passes: 1
    "bob": repr({k: v for k, v in planes.REFERENCE.items() if k != "claim-check bucket"}),  # one hidden case fails
    "cy": repr({**planes.REFERENCE, "state machine": "state"}),  # one public case fails
    "dee": "...",  # not yet
    "eve": repr({k: v for k, v in planes.REFERENCE.items() if k not in ("rules", "workers")}),  # two hidden fail
}


@pytest.fixture(scope="module")
def room(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("room")
    for learner, answer in ANSWERS.items():
        nb = new_notebook(cells=[new_code_cell("from fleetlab.course.grading import check"),
                                 new_code_cell(f"planes = {answer}"), new_code_cell('check("00.planes", planes)')])
        folder = root / learner if learner in ("bob", "eve") else root  # both conventions in one room
        folder.mkdir(exist_ok=True)
        nbformat.write(nb, folder / ("00_orientation.ipynb" if folder != root else f"{learner}_00_orientation.ipynb"))
    return root


@pytest.fixture(scope="module")
def unsharded(room, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("unsharded") / "grades.csv"
    assert main(["grade", str(room), "--out", str(out), "--feedback", str(out.parent / "feedback")]) == 0
    return out


def test_the_unsharded_gradebook_scores_each_learner(unsharded):
    with unsharded.open(newline="") as file:
        rows = list(csv.reader(file))
    assert rows == [
        ["learner", "00.planes", "total"],
        ["Points Possible", "1", "1"],
        ["ann", "1", "1"],
        ["bob", "0.875", "0.875"],
        ["cy", "0.875", "0.875"],
        ["dee", "0", "0"],
        ["eve", "0.75", "0.75"],
    ]


def test_the_merged_shards_are_the_unsharded_gradebook(room, unsharded, tmp_path, capsys):
    count = 2  # five learners in two shards, of three and of two (each shard is a grading run of its own)
    shards = []
    for index in range(1, count + 1):
        out = tmp_path / f"shard-{index}.csv"
        argv = ["grade", str(room), "--shard", f"{index}/{count}", "--out", str(out),
                "--feedback", str(tmp_path / "feedback")]
        assert main(argv) == 0
        shards.append(out)
    assert f"(shard {count}/{count}: " in capsys.readouterr().out
    merged = tmp_path / "all.csv"
    assert main(["gradebook", "merge", *map(str, shards), "--out", str(merged)]) == 0
    assert merged.read_bytes() == unsharded.read_bytes()
    assert sorted(path.name for path in (tmp_path / "feedback").iterdir()) == [f"{name}.md" for name in ANSWERS]
    assert (tmp_path / "feedback" / "bob.md").read_text() == (unsharded.parent / "feedback" / "bob.md").read_text()

"""Submissions: which learner and lab each notebook is, and which of them a shard grades.

A submission names its learner in one of two ways (``LEARNER_CONVENTION``):

- its file name, ``<learner>_<NN>_<anything>.ipynb``: ``alice_01_at_least_once.ipynb``
  is learner ``alice``, lab ``01``;
- its folder, ``<learner>/<NN>_<anything>.ipynb``: ``alice/01_at_least_once.ipynb``
  (a JupyterHub room collected one home folder per learner).

A learner id is letters, digits, ``.``, ``-`` and ``_``, starting with a letter
or digit. A notebook that fits neither form, or sits directly in a folder
given on the command line (no learner folder), is refused, never guessed.

Sharding (``--shard I/N``) splits by learner, so a learner's whole row is
graded by one shard: the learner ids are sorted (as text) and the learner at
position ``k`` (from 0) belongs to shard ``k % N + 1``. Every shard must see
the same submissions (one mounted volume, one checkout) for the shares to
be a partition; the order the file system lists them in does not matter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fleetlab.core.errors import InvalidInput

LEARNER_ID = r"[A-Za-z0-9][A-Za-z0-9._-]*"
NAMED_BY_FILE = re.compile(rf"^(?P<learner>{LEARNER_ID}?)_(?P<lab>\d\d)_.*\.ipynb$")
NAMED_BY_FOLDER = re.compile(r"^(?P<lab>\d\d)_.*\.ipynb$")
WHOLE_ID = re.compile(rf"^{LEARNER_ID}$")
LEARNER_CONVENTION = ("name each notebook <learner>_<NN>_<lab>.ipynb (alice_01_at_least_once.ipynb), "
                      "or put it in a folder named for its learner (alice/01_at_least_once.ipynb)")
SHARD = re.compile(r"^(?P<index>\d+)/(?P<count>\d+)$")


@dataclass(frozen=True)
class Submission:
    """One notebook to grade: its path, its learner's id and the lab its name says it is."""

    path: Path
    learner: str
    lab: str


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (both from 1): ``Shard(2, 3)`` is ``--shard 2/3``."""

    index: int
    count: int

    def holds(self, position: int) -> bool:
        """Whether the learner at sorted ``position`` (from 0) is this shard's."""
        return position % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


ALL = Shard(1, 1)


def parse_shard(text: str) -> Shard:
    """``"I/N"`` as a Shard; InvalidInput naming ``--shard`` unless 1 <= I <= N."""
    match = SHARD.match(text.strip())
    if not match:
        raise InvalidInput("--shard", f"is {text!r}, not I/N", hint="two whole numbers, e.g. 1/3 for the first of 3")
    index, count = int(match["index"]), int(match["count"])
    if count < 1:
        raise InvalidInput("--shard", f"is {text!r}: N must be at least 1", hint="e.g. 1/3")
    if not 1 <= index <= count:
        raise InvalidInput("--shard", f"is {text!r}: I must be from 1 to {count}", hint=f"1/{count} .. {count}/{count}")
    return Shard(index, count)


def learner_of(path: Path, roots: Iterable[Path] = ()) -> tuple[str, str]:
    """``(learner id, lab)`` of the notebook at ``path`` (see the module's convention).

    ``roots`` are the folders named on the command line: a notebook directly
    in one of them has no learner folder. Raises InvalidInput naming the path.
    """
    if match := NAMED_BY_FILE.match(path.name):
        return match["learner"], match["lab"]
    folder = path.parent
    if (match := NAMED_BY_FOLDER.match(path.name)) and WHOLE_ID.match(folder.name) and folder not in set(roots):
        return folder.name, match["lab"]
    raise InvalidInput("PATH", f"no learner id in {str(path)!r}", hint=LEARNER_CONVENTION)


def find_submissions(paths: Iterable[Path]) -> list[Submission]:
    """The notebooks named, or under the folders named, as submissions sorted by learner, lab and path.

    Raises InvalidInput for a path that is neither notebook nor folder, a
    notebook with no learner id, or one learner with two notebooks of one lab.
    """
    paths = list(paths)
    roots = [path.resolve() for path in paths if path.is_dir()]
    found = []
    for notebook in find_notebooks(paths):
        learner, lab = learner_of(notebook.resolve(), roots)
        found.append(Submission(notebook, learner, lab))
    found.sort(key=lambda sub: (sub.learner, sub.lab, str(sub.path)))
    _refuse_two_of_one_lab(found)
    return found


def shard_of(submissions: Sequence[Submission], shard: Shard) -> list[Submission]:
    """The submissions of the learners ``shard`` holds (see the module's docstring), in the same order."""
    learners = sorted({sub.learner for sub in submissions})
    mine = {learner for position, learner in enumerate(learners) if shard.holds(position)}
    return [sub for sub in submissions if sub.learner in mine]


def _refuse_two_of_one_lab(submissions: Sequence[Submission]) -> None:
    seen: dict[tuple[str, str], Path] = {}
    for sub in submissions:
        key = (sub.learner, sub.lab)
        if key in seen:
            raise InvalidInput("PATH", f"learner {sub.learner!r} has two notebooks of lab {sub.lab}: "
                                       f"{str(seen[key])!r} and {str(sub.path)!r}", hint="grade one of them")
        seen[key] = sub.path


def find_notebooks(paths: Iterable[Path]) -> list[Path]:
    """The notebooks named, or found under the folders named (checkpoints skipped), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        elif path.suffix == ".ipynb" and path.is_file():
            found.append(path)
        else:
            raise InvalidInput("PATH", f"{str(path)!r} is neither a notebook nor a folder", hint="pass .ipynb files")
    return found


def lab_of(path: Path) -> str:
    """The lab a notebook's name gives (``alice_01_at_least_once.ipynb``, ``alice/01_...``), or "" if none."""
    match = NAMED_BY_FILE.match(path.name) or NAMED_BY_FOLDER.match(path.name)
    return match["lab"] if match else ""

"""Submissions: which learner and lab each notebook is, what is left out and why, and which of them a shard grades.

A submission names its learner in one of two ways (``LEARNER_CONVENTION``):

- its file name, ``<learner>_<NN>_<anything>.ipynb``: ``alice_01_at_least_once.ipynb``
  is learner ``alice``, lab ``01``; here a learner id is letters, digits,
  ``.``, ``-``, ``_``, ``@`` and ``+``, starting with a letter or digit;
- its folder, ``<learner>/<NN>_<anything>.ipynb``: ``alice/01_at_least_once.ipynb``
  (a JupyterHub room collected one home folder per learner). The folder's
  name is the learner id, whatever a hub allows (``h.o@example.org``), and
  it names the notebook's owner even when the file is named for another.

Intake (``take_in``) never lets one file sink the batch: a notebook that
names no lab (``Untitled.ipynb``) or one the course does not have, a second notebook of one lab for one
learner (a Jupyter ``-Copy1`` duplicate among them), a folder inside a
learner's folder, a symbolic link, or anything that is not a regular file
is left out with a ``Note`` saying so; the rest are graded (of two
notebooks of one lab, the one named as the room named it, never the copy).
Nothing is opened while looking: every entry in a folder is ``lstat``-ed,
and no link is followed (a notebook named on the command line that is a
link neither).
A notebook whose bytes are no notebook (not UTF-8, not JSON) is its
owner's error row (``read_notebook``), never anyone else's.

Sharding (``--shard I/N``) splits by learner, so a learner's whole row is
graded by one shard: the learner ids are sorted (as text) and the learner at
position ``k`` (from 0) belongs to shard ``k % N + 1``. Every shard must see
the same submissions (one mounted volume, one checkout) for the shares to
be a partition; the order the file system lists them in does not matter.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import registry

LEARNER_ID = r"[A-Za-z0-9][A-Za-z0-9._@+-]*"
NAMED_BY_FILE = re.compile(rf"^(?P<learner>{LEARNER_ID}?)_(?P<lab>\d\d)_.*\.ipynb$")
NAMED_BY_FOLDER = re.compile(r"^(?P<lab>\d\d)_.*\.ipynb$")
JUPYTER_COPY = re.compile(r"-Copy\d+\.ipynb$")
CHECKPOINTS = ".ipynb_checkpoints"
LEARNER_CONVENTION = ("name each notebook <learner>_<NN>_<lab>.ipynb (alice_01_at_least_once.ipynb), "
                      "or put it in a folder named for its learner (alice/01_at_least_once.ipynb)")
SHARD = re.compile(r"^(?P<index>\d+)/(?P<count>\d+)$")
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_NOTEBOOK_BYTES = 32 * 2**20
"""The most a submitted notebook may weigh; a heavier one is its owner's error, never read."""


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


RUN_HINT = "letters, digits, '.', '-' and '_', at most 64, the same for every shard of a run: e.g. --run lab03-day1"


def parse_run(text: str) -> str:
    """``text`` as a run id; InvalidInput naming ``--run`` unless it is one (``RUN_ID``)."""
    if not RUN_ID.match(text):
        raise InvalidInput("--run", f"is {text!r}, not a run id", hint=RUN_HINT)
    return text


@dataclass(frozen=True)
class Note:
    """A notebook intake left out, or graded as another's than its name says: its path and what was done."""

    path: Path
    says: str

    def __str__(self) -> str:
        return f"{printable(str(self.path))}: {self.says}"


@dataclass(frozen=True)
class Intake:
    """What ``take_in`` found: the submissions to grade, sorted by learner, lab and path, and its notes."""

    submissions: list[Submission]
    notes: list[Note]


@dataclass(frozen=True)
class Unreadable:
    """Why a submission's bytes are no notebook (``read_notebook``), said to its learner."""

    reason: str

    def __str__(self) -> str:
        return self.reason


def take_in(paths: Iterable[Path]) -> Intake:
    """The submissions among the notebooks named and under the folders named, and a note per file left out.

    A folder named is a room: notebooks directly in it are named for their
    learner, its folders are learners' folders (see the module's docstring).
    Raises InvalidInput only for a path named that is neither a notebook nor
    a folder (a typo on the command line); every other problem is a note.
    """
    found: list[Submission] = []
    notes: list[Note] = []
    for path in paths:
        if path.is_dir():
            _take_room(path, found, notes)
        elif path.suffix == ".ipynb" and (path.is_symlink() or path.exists()):
            _take_named(path, found, notes)
        else:
            raise InvalidInput("PATH", f"{str(path)!r} is neither a notebook nor a folder",
                               hint="pass .ipynb files, or folders of them")
    labs = registry.known_labs()
    notes += [Note(sub.path, f"names lab {sub.lab}, which this course has no checks for: not graded (its labs: "
                             f"{', '.join(labs)})") for sub in found if sub.lab not in labs]
    kept = _one_per_lab([sub for sub in found if sub.lab in labs], notes)
    return Intake(kept, sorted(notes, key=lambda note: str(note.path)))


def _take_room(room: Path, found: list[Submission], notes: list[Note]) -> None:
    for entry in _listing(room):
        path, kind = Path(entry.path), _kind(entry)
        if kind == "folder":
            if not _is_learner_folder(entry.name):
                notes.append(Note(path, "a hidden folder, or one named with control characters: no learner's, "
                                        "not graded"))
            else:
                _take_learner_folder(path, found, notes)
        elif entry.name.endswith(".ipynb"):
            if kind != "file":
                notes.append(Note(path, NOT_A_FILE[kind]))
            elif match := NAMED_BY_FILE.match(entry.name):
                found.append(Submission(path, match["learner"], match["lab"]))
            else:
                notes.append(Note(path, f"names no learner: not graded ({LEARNER_CONVENTION})"))


def _take_learner_folder(folder: Path, found: list[Submission], notes: list[Note]) -> None:
    learner = folder.name
    for entry in _listing(folder):
        path, kind = Path(entry.path), _kind(entry)
        if kind == "folder":
            notes.append(Note(path, f"a folder inside {learner}'s folder: not graded (a learner's notebooks "
                                    f"sit directly in their folder; move one up to grade it)"))
        elif entry.name.endswith(".ipynb"):
            if kind != "file":
                notes.append(Note(path, NOT_A_FILE[kind]))
            else:
                _take_owned(path, learner, found, notes)


def _take_owned(path: Path, owner: str, found: list[Submission], notes: list[Note]) -> None:
    lab = lab_of(path)
    if not lab:
        notes.append(Note(path, "names no lab: not graded (a notebook's name starts with its lab, "
                                "NN_: rename it as the lab's notebook, e.g. 01_at_least_once.ipynb)"))
        return
    named = NAMED_BY_FILE.match(path.name)
    if named and named["learner"] != owner:
        notes.append(Note(path, f"named for learner {named['learner']!r} but found in {owner}'s folder: graded "
                                f"as {owner}'s"))
    found.append(Submission(path, owner, lab))


def _take_named(path: Path, found: list[Submission], notes: list[Note]) -> None:
    if path.is_symlink() or not path.is_file():
        notes.append(Note(path, NOT_A_FILE["link" if path.is_symlink() else "other"]))
    elif match := NAMED_BY_FILE.match(path.name):
        found.append(Submission(path, match["learner"], match["lab"]))
    elif NAMED_BY_FOLDER.match(path.name) and _is_learner_folder(folder := path.resolve().parent.name):
        _take_owned(path, folder, found, notes)
    else:
        notes.append(Note(path, f"names no learner: not graded ({LEARNER_CONVENTION})"))


def _is_learner_folder(name: str) -> bool:
    """Whether a folder's name is a learner id: any name a hub allows, neither hidden nor with control characters."""
    return bool(name) and not name.startswith(".") and name.isprintable()


NOT_A_FILE = {
    "link": "a symbolic link: never followed, not graded (hand in the notebook itself)",
    "other": "not a regular file (a FIFO, socket or device): never opened, not graded",
}


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        return sorted((entry for entry in entries if entry.name != CHECKPOINTS), key=lambda entry: entry.name)


def _kind(entry: os.DirEntry[str]) -> str:
    """``folder``, ``file``, ``link`` or ``other``, from the entry's own type: a link is never followed."""
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "folder"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _one_per_lab(found: Sequence[Submission], notes: list[Note]) -> list[Submission]:
    """One submission per learner and lab, and a note for each other one.

    The one graded is, in this order: not a Jupyter copy; named as most of
    the room named that lab's notebook (the name it was handed out under);
    first by path.
    """
    unique = {os.path.realpath(sub.path): sub for sub in reversed(found)}  # a file named twice is one file
    room_names = Counter((sub.lab, _lab_notebook_name(sub)) for sub in unique.values())
    ranked = sorted(unique.values(), key=lambda sub: (
        sub.learner, sub.lab, bool(JUPYTER_COPY.search(sub.path.name)), -room_names[sub.lab, _lab_notebook_name(sub)],
        str(sub.path)))
    kept: dict[tuple[str, str], Submission] = {}
    for sub in ranked:
        first = kept.setdefault((sub.learner, sub.lab), sub)
        if first is not sub:
            what = "a Jupyter copy" if JUPYTER_COPY.search(sub.path.name) else "a second notebook"
            notes.append(Note(sub.path, f"{what} of lab {sub.lab} for {sub.learner}: not graded "
                                        f"({str(first.path)!r} is; keep one notebook per lab)"))
    return list(kept.values())


def _lab_notebook_name(sub: Submission) -> str:
    """The notebook's name without a learner prefix: ``alice_01_at_least_once.ipynb`` is ``01_at_least_once.ipynb``."""
    named = NAMED_BY_FILE.match(sub.path.name)
    return sub.path.name[len(named["learner"]) + 1:] if named else sub.path.name


def read_notebook(path: Path) -> str | Unreadable:
    """The text of the notebook at ``path``, or why it is none (Unreadable); never opens what is no regular file.

    The file is ``lstat``-ed first: a link, a FIFO, a device, or a file over
    ``MAX_NOTEBOOK_BYTES`` is never opened. Its bytes must be UTF-8 JSON that
    nbformat reads as a notebook.
    """
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            return Unreadable(NOT_A_FILE["link" if stat.S_ISLNK(info.st_mode) else "other"])
        if info.st_size > MAX_NOTEBOOK_BYTES:
            return Unreadable(_too_heavy(info.st_size))
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(descriptor, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # replaced since the lstat
                return Unreadable(NOT_A_FILE["other"])
            data = file.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        return Unreadable(f"the notebook could not be read ({exc.strerror}): hand it in again")
    return Unreadable(_too_heavy(len(data))) if len(data) > MAX_NOTEBOOK_BYTES else notebook_text(data)


def notebook_text(data: bytes) -> str | Unreadable:
    """``data`` as a notebook's text, or why it is none: not UTF-8, not JSON, or JSON that is no notebook."""
    again = "open it in Jupyter and save it again, or hand in a fresh copy of the lab's notebook"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Unreadable(f"the notebook is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
                          f"{again}")
    try:
        json.loads(text)
    except ValueError as exc:
        return Unreadable(f"the notebook is not JSON ({exc}): {again}")
    try:
        nbformat.reads(text, as_version=4)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return Unreadable(f"the file is JSON but no Jupyter notebook ({type(exc).__name__}: {exc}): {again}")
    return text


def _too_heavy(size: int) -> str:
    return (f"the notebook weighs {size / 2**20:.0f} MB, over the {MAX_NOTEBOOK_BYTES // 2**20} MB a notebook may: "
            f"clear its outputs (Edit > Clear Outputs of All Cells) and save it again")


def shard_of(submissions: Sequence[Submission], shard: Shard) -> list[Submission]:
    """The submissions of the learners ``shard`` holds (see the module's docstring), in the same order."""
    learners = sorted({sub.learner for sub in submissions})
    mine = {learner for position, learner in enumerate(learners) if shard.holds(position)}
    return [sub for sub in submissions if sub.learner in mine]


def lab_of(path: Path) -> str:
    """The lab a notebook's name gives (``alice_01_at_least_once.ipynb``, ``alice/01_...``), or "" if none."""
    match = NAMED_BY_FILE.match(path.name) or NAMED_BY_FOLDER.match(path.name)
    return match["lab"] if match else ""


def learner_file_name(learner: str, suffix: str) -> str:
    """A file name for ``learner``'s file: one path component whatever the id holds, distinct for distinct ids.

    Letters, digits and ``._-~@+`` stay; every other character (``/``, ``%``,
    a space, a control character) and a leading ``.`` are percent-escaped.
    """
    escaped = quote(learner, safe="@+")
    return ("%2E" + escaped[1:] if escaped.startswith(".") else escaped) + suffix


def printable(text: str) -> str:
    """``text`` with each character a terminal would act on (an escape, a newline) written as its escape code."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def csv_cell(text: str) -> str:
    """``text`` safe as a spreadsheet cell: one starting ``=``, ``+``, ``-``, ``@``, tab or CR gets a leading ``'``.

    A spreadsheet reads such a cell as a formula (OWASP's CSV injection); the
    quote makes it text, as Excel and LibreOffice show it.
    """
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text

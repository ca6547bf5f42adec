"""Hand the release out, collect the room's notebooks, hand each learner's feedback back.

Each step goes through a ``Room`` (``room``): a JupyterHub's API or the home folders. A learner's
folder in the learner's home is ``labs/`` (``FOLDER``), where the room's JupyterLab opens. A problem
with one learner (a server that will not start, an unreadable file) is said and costs no other
learner anything.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from fleetlab.core.errors import BackendUnavailable, InvalidInput
from fleetlab_instructor.collect.manifest import (TIME_FORMAT, Collected, LeftOut, Manifest, read_manifest,
                                                  write_manifest)
from fleetlab_instructor.collect.room import Room
from fleetlab_instructor.grade.submissions import lab_of, learner_file_name

T = TypeVar("T")

FOLDER = "labs"
FEEDBACK_FOLDER = "feedback"
"""Where in a learner's home their feedback goes: ``feedback/<run>.md``."""


@dataclass
class Report:
    """What a step did, one line per learner or file, and what it could not do."""

    done: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def now() -> str:
    """The time in UTC, to the second, as the manifest writes it."""
    return time.strftime(TIME_FORMAT, time.gmtime())


def each_learner(room: Room, learners: Sequence[str], work: Callable[[str], T]) -> list[T]:
    """``work(learner)`` for each learner, ``room.at_once`` of them at a time; the results in ``learners``' order."""
    with ThreadPoolExecutor(max_workers=room.at_once) as pool:
        return list(pool.map(work, learners))


def hand_out(room: Room, learners: Sequence[str], release: Path) -> Report:
    """Put the release's student notebooks into each learner's ``labs/``; a notebook a learner has is kept."""
    if (release / "labs" / "solutions").exists() or not (release / "labs").is_dir():
        raise InvalidInput("RELEASE", f"{str(release)!r} is not a learner's release (it has no labs/, or holds "
                                      "labs/solutions)", hint="write one with `fleetlab release OUT` and name OUT")
    notebooks = {path.name: path.read_bytes() for path in sorted((release / "labs").glob("*.ipynb"))}

    def give(learner: str) -> tuple[bool, str]:
        try:
            with room.home(learner) as home:
                given = [name for name, data in notebooks.items()
                         if home.write(f"{FOLDER}/{name}", data, replace=False)]
        except (BackendUnavailable, OSError) as exc:
            return False, f"{learner}: nothing handed out ({exc})"
        kept = len(notebooks) - len(given)
        return True, (f"{learner}: {len(given)} notebooks handed out"
                      + (f", {kept} kept as the learner has them" if kept else ""))

    return _report(each_learner(room, learners, give))


def collect(room: Room, learners: Sequence[str], labs: Sequence[str], out: Path, run: str,
            on_time: Path | None) -> tuple[Manifest, Report]:
    """Copy each learner's notebooks of ``labs`` from ``labs/`` in their home to ``out/<learner>/``, with a manifest.

    ``out`` must be new or empty. With ``on_time`` (an earlier collect's folder, the deadline's), a notebook is
    late when that snapshot lacks it or holds other bytes (``manifest``'s docstring).
    """
    snapshot = read_manifest(on_time) if on_time is not None else None
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInput("--out", f"{str(out)!r} exists and is not an empty folder",
                           hint="each collect gets a folder of its own, e.g. collected/day1-final")
    held = {(entry.learner, entry.path): entry.sha256 for entry in snapshot.notebooks} if snapshot else {}
    manifest = Manifest(run, now(), room.where, list(labs),
                        {"run": snapshot.run, "collected_at": snapshot.collected_at} if snapshot else None)

    def take(learner: str) -> tuple[list[Collected], list[LeftOut]]:
        folder = learner_file_name(learner, "")
        taken: list[Collected] = []
        left: list[LeftOut] = []
        try:
            with room.home(learner) as home:
                entries = home.list(FOLDER)
                if entries is None:
                    return taken, [LeftOut(learner, FOLDER, f"no {FOLDER}/ folder in the home")]
                for entry in entries:
                    if not entry.name.endswith(".ipynb"):
                        continue
                    where = f"{FOLDER}/{entry.name}"
                    lab = lab_of(Path(entry.name))
                    if entry.kind != "file":
                        left.append(LeftOut(learner, where, "not a regular file (a link or a folder)"))
                    elif not lab:
                        left.append(LeftOut(learner, where, "names no lab (NN_ at its start)"))
                    elif lab in labs:
                        data = home.read(where)
                        path = f"{folder}/{entry.name}"
                        (out / folder).mkdir(parents=True, exist_ok=True)
                        (out / path).write_bytes(data)
                        sha = hashlib.sha256(data).hexdigest()
                        late = snapshot is not None and held.get((learner, path)) != sha
                        taken.append(Collected(learner, folder, path, lab, now(), run, sha, late))
        except (BackendUnavailable, OSError) as exc:
            left.append(LeftOut(learner, "", f"the home could not be read: {exc}"))
        return taken, left

    for taken, left in each_learner(room, learners, take):
        manifest.notebooks += taken
        manifest.left_out += left
    report = Report([f"{entry.learner}: {entry.path}" + (" (late)" if entry.late else "") for entry in manifest.notebooks],
                    [f"{item.learner}: {item.path or 'home'}: not collected, {item.why}" for item in manifest.left_out])
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(manifest, out)
    return manifest, report


def return_feedback(room: Room, collected: Path, feedback: Path, learners: Sequence[str]) -> Report:
    """Write each collected learner's ``feedback/<learner>.md`` to ``feedback/<run>.md`` in their own home, only.

    The learners are those of the collect's manifest that are among ``learners``. A feedback file that
    is no collected learner's is not handed to anyone, and said.
    """
    manifest = read_manifest(collected)
    owners = {entry.learner: entry.folder for entry in manifest.notebooks}
    files = {learner: feedback / learner_file_name(folder, ".md") for learner, folder in owners.items()}
    stray = [f"{path.name}: returned to no one (no learner of collect {manifest.run!r} has it)"
             for path in sorted(feedback.glob("*.md")) if path not in set(files.values())]
    target = f"{FEEDBACK_FOLDER}/{manifest.run}.md"

    def give(learner: str) -> tuple[bool, str]:
        path = files[learner]
        if not path.is_file():
            return False, (f"{learner}: no feedback file {path} (graded with `fleetlab grade {collected}`? its "
                           "--feedback folder is the one to name)")
        try:
            with room.home(learner) as home:
                home.write(target, path.read_bytes(), replace=True)
        except (BackendUnavailable, OSError) as exc:
            return False, f"{learner}: feedback not returned ({exc})"
        return True, f"{learner}: {target}"

    returned = _report(each_learner(room, [learner for learner in sorted(files) if learner in learners], give))
    skipped = [f"{learner}: skipped (not among the room's learners chosen)"
               for learner in sorted(files) if learner not in learners]
    return Report(returned.done + skipped, stray + returned.problems)


def _report(outcomes: Sequence[tuple[bool, str]]) -> Report:
    """A Report of ``(done, line)`` pairs, in their order."""
    return Report([line for done, line in outcomes if done], [line for done, line in outcomes if not done])

"""Where each lab lives: one row per lab, from its notebooks to its facilitator note.

A lesson's modules share one name in every layer that holds them (lab 05,
``scaling``: ``course/experiments/scaling.py``, ``display/scaling_*.py``,
``composition/scaling/``); its checks are named by the lab's number
(``course/checks/lab05/``, and the instructor's ``checks/lab05/``). ``lab("5")``
gives the row and ``Lab.parts()`` every file of it, as paths from the
course repository's root: the notebooks and notes are not in the installed
library, and a learner's release holds no solutions, instructor's checks or
facilitator notes.
``tests/test_labs_table.py`` holds the table to the tree and the check registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.registry import lab_id

SHARED_DISPLAY = ("plots", "tables")
"""Display modules every lab uses (the figure the lessons' plots draw on, ``Table``, a trace's views): no lab's own."""

_LIBRARY = "src/fleetlab"
_INSTRUCTOR = "instructor/src/fleetlab_instructor"


@dataclass(frozen=True)
class Lab:
    """One lab: ``id`` (two digits), ``name`` (the lesson's module name in every layer), ``title`` (the notebook's),
    ``notebook`` (the notebooks' file stem), ``checks`` (check names, ``NN.<name>``), and the lesson's modules by
    layer: ``experiments`` (in ``course/experiments/``), ``display`` (in ``display/``), ``composition`` (a package
    in ``composition/``, or empty)."""

    id: str
    name: str
    title: str
    notebook: str
    checks: tuple[str, ...]
    experiments: tuple[str, ...] = ()
    display: tuple[str, ...] = ()
    composition: str = ""

    @property
    def check_ids(self) -> tuple[str, ...]:
        return tuple(f"{self.id}.{check}" for check in self.checks)

    @property
    def student_notebook(self) -> str:
        return f"labs/{self.notebook}.ipynb"

    @property
    def instructor_notebook(self) -> str:
        return f"labs/solutions/{self.notebook}.ipynb"

    @property
    def facilitator_note(self) -> str:
        return f"docs/facilitator/{self.notebook}.md"

    @property
    def check_modules(self) -> tuple[str, ...]:
        """The public side of each check: its harness and public cases."""
        return tuple(f"fleetlab.course.checks.lab{self.id}.{check}" for check in self.checks)

    @property
    def instructor_check_modules(self) -> tuple[str, ...]:
        """The instructor's side of each check: hidden cases, the reference answer, the catalogues."""
        return tuple(f"fleetlab_instructor.checks.lab{self.id}.{check}" for check in self.checks)

    @property
    def experiment_modules(self) -> tuple[str, ...]:
        return tuple(f"fleetlab.course.experiments.{module}" for module in self.experiments)

    @property
    def display_modules(self) -> tuple[str, ...]:
        return tuple(f"fleetlab.display.{module}" for module in self.display)

    @property
    def composition_package(self) -> str:
        return f"fleetlab.composition.{self.composition}" if self.composition else ""

    def parts(self) -> dict[str, tuple[str, ...]]:
        """Every file and folder of the lab by kind, as paths from the repository's root."""
        return {
            "notebooks": (self.instructor_notebook, self.student_notebook),
            "checks": tuple(f"{_LIBRARY}/course/checks/lab{self.id}/{check}.py" for check in self.checks),
            "instructor checks": tuple(f"{_INSTRUCTOR}/checks/lab{self.id}/{check}.py" for check in self.checks),
            "experiments": tuple(f"{_LIBRARY}/course/experiments/{module}.py" for module in self.experiments),
            "display": tuple(f"{_LIBRARY}/display/{module}.py" for module in self.display),
            "composition": (f"{_LIBRARY}/composition/{self.composition}/",) if self.composition else (),
            "facilitator note": (self.facilitator_note,),
        }


LABS = (
    Lab("00", "orientation", "Orientation: one event, every hop", "00_orientation", ("planes",)),
    Lab("01", "delivery", "At-least-once delivery: why the queue hands you the same work twice", "01_at_least_once",
        ("heartbeat", "visibility"), ("delivery",), ("delivery_plots", "delivery_widgets")),
    Lab("02", "idempotency", "Idempotency keys: one effect, however often the work arrives", "02_idempotency_keys",
        ("consumer", "lease", "window"), ("idempotency",)),
    Lab("03", "poison", "Poison messages and DLQs: park them, triage them, bring them back", "03_poison_and_dlq",
        ("batch", "budget", "redrive", "triage"), ("poison",), ("poison_plots", "poison_widgets")),
    Lab("04", "callback", "waitForTaskToken: the token loop, and every way it breaks", "04_wait_for_task_token",
        ("callback", "catch", "timeouts"), ("callback",), ("callback_plots", "callback_widgets")),
    Lab("05", "scaling", "KEDA sizing: autoscaling on queue depth, and the arithmetic of a fleet", "05_keda_sizing",
        ("bill", "burst", "max_replicas", "queue_length"), ("scaling",),
        ("scaling_tables", "scaling_plots", "scaling_widgets"), "scaling"),
    Lab("06", "replay", "Replay hazards: archives, replays and the targets that must never see them",
        "06_replay_hazards", ("pattern", "retry_policy", "targets", "window"), ("replay",),
        ("replay_plots", "replay_widgets")),
    Lab("07", "chaos", "The capstone: the whole fleet through a chaos day", "07_capstone_fleet",
        ("configure", "defects"), ("chaos",), ("chaos_plots", "chaos_widgets"), "chaos"),
)
"""Every lab the course ships, in order."""


def lab(given: Any) -> Lab:
    """The row of lab ``given``: ``"05"``, ``"5"`` or ``5``. Raises InvalidInput naming ``lab`` for any other."""
    wanted = lab_id(given)
    for row in LABS:
        if row.id == wanted:
            return row
    known = ", ".join(row.id for row in LABS)
    raise InvalidInput("lab", f"there is no lab {given!r}", hint=f"give a lab's number: {known}")

"""Starting and closing a lab: the one call a notebook's set-up cell makes.

``start("01")`` opens the backend (``$FLEETLAB_BACKEND``, default moto),
provisions the reference topology under a fresh prefix, builds the fleet, and
prints the backend with the ways it differs from AWS. ``lab.close()`` removes
everything. It is also registered with ``atexit``, which runs when the kernel
shuts down normally, but not when it is killed or crashes: on LocalStack and
real AWS, where resources outlive the kernel, the banner prints the
``fleetlab cleanup --prefix ...`` command that removes what a dead kernel
left. (On moto and moto-server everything lives in the kernel and dies with
it.) Starting a lab again in the same kernel closes the previous one first,
so re-running the set-up cell is safe. In IPython, a lab also installs the
hint for a cell run before the cells it needs (``hints``).
"""

from __future__ import annotations

import atexit
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fleetlab.backends.backend import Backend, chosen_backend, open_backend
from fleetlab.backends.fidelity import background
from fleetlab.backends.fidelity.cache import cache_path, cached
from fleetlab.composition.cost import require_opt_in
from fleetlab.composition.pipeline import Fleet
from fleetlab.composition.topology import Topology, TopologySpec, new_prefix, provision
from fleetlab.core.errors import InvalidInput
from fleetlab.core.settings import settings
from fleetlab.core.faults import FaultPlan
from fleetlab.core.timescale import describe_scale
from fleetlab.course import hints
from fleetlab.services.agents.model import FakeModel

if TYPE_CHECKING:
    from fleetlab.backends.fidelity import FidelityTable

_current: Lab | None = None


@dataclass
class Lab:
    """A running lab: its backend, topology and fleet."""

    id: str
    backend: Backend
    topology: Topology
    fleet: Fleet
    closed: bool = False

    def fidelity(self) -> FidelityTable:
        """The backend's fidelity table (probed once per backend and version, then cached; waits for a measurement
        the set-up cell started in the background)."""
        from fleetlab.backends.fidelity import probe

        return probe(self.backend)

    def close(self) -> None:
        """Tear the topology down and close the backend. Idempotent."""
        global _current
        if self.closed:
            return
        self.closed = True
        problems = self.topology.teardown()
        self.backend.close()
        if _current is self:
            _current = None
        if problems:
            print(f"lab {self.id}: could not remove {problems}; delete them by hand")


def start(
    lab_id: str,
    *,
    backend: str | None = None,
    spec: TopologySpec | None = None,
    seed: int = 0,
    faults: FaultPlan | None = None,
    quiet: bool = False,
) -> Lab:
    """Open the backend, provision the lab's topology and fleet, print the banner.

    ``lab_id`` is the notebook's two digits, ``"03"`` (``"3"`` and ``3`` work too). Raises InvalidInput naming ``lab`` and the course's labs for a lab the
    course does not have. On ``aws`` the lab's cost estimate is printed first,
    and without ``FLEETLAB_ALLOW_REAL_AWS=1`` RealAwsRefused (carrying the
    estimate) is raised. Either is raised before anything is opened or made.
    """
    global _current
    lab_id = _require_lab(lab_id)
    if chosen_backend(backend) == "aws":
        require_opt_in(lab_id)
    if _current is not None:
        _current.close()
    opened = open_backend(backend)
    try:
        topology = provision(opened, spec, prefix=new_prefix(lab_id))
    except Exception:
        opened.close()
        raise
    fleet = Fleet(opened, topology, model=FakeModel(seed=seed), faults=faults)
    lab = Lab(id=lab_id, backend=opened, topology=topology, fleet=fleet)
    _current = lab
    atexit.register(lab.close)
    _install_hints()
    if not quiet:
        print(banner(lab))
    return lab


def _install_hints() -> None:
    """In IPython: show a cell's IndexError, StopIteration or NameError with "run the cells above first"."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        hints.install(shell)


def _require_lab(given: str) -> str:
    """The course's id of lab ``given`` (``"03"`` for ``"3"``); InvalidInput naming ``lab`` and listing the labs
    when the course has no such lab.

    The course's labs are those with checks (``registry.known_labs``): one per notebook.
    """
    from fleetlab.course.grading.registry import known_labs, lab_id  # the grading package loads only when a lab starts

    labs = known_labs()
    chosen = lab_id(given)
    if chosen not in labs:
        raise InvalidInput("lab", f"there is no lab {given!r}; the labs are {', '.join(labs)}",
                           hint='give the two digits of the notebook\'s name, like fleetlab.start("01")')
    return chosen


def banner(lab: Lab) -> str:
    """What the set-up cell prints: backend, clock, each divergence from AWS, and how to clean up.

    The divergences come from the cached fidelity table; with none cached, the table is measured in another
    process and the banner says so (a graded kernel, or one that cannot start that process, measures it here).
    """
    backend = lab.backend
    account = f" (account {backend.details['account']})" if "account" in backend.details else ""
    lines = [f"lab {lab.id} on {backend.name}{account}: {backend.details.get('emulator', '')}"]
    if backend.clock.virtual:
        lines.append(f"clock: virtual (long waits pass instantly); resources: {lab.topology.prefix}*")
    else:
        lines += [f"clock: {describe_scale(backend.clock.scale)}", f"resources: {lab.topology.prefix}*"]
    table = cached(backend)
    if table is None and not settings().graded and background.start(backend, cache_path(backend)):
        lines.append(f"where {backend.name} differs from AWS: being measured once for this version, in the background "
                     "(lab.fidelity() shows it when ready)")
        divergences = ()
    else:
        divergences = (table or lab.fidelity()).divergences()
    if divergences:
        lines.append(f"where {backend.name} differs from AWS ({len(divergences)}):")
        lines += [f"  - {d.title}" for d in divergences]
        lines.append("  (lab.fidelity() shows what AWS does and what happens here)")
    if backend.outlives_process:
        lines.append(
            f"if this kernel dies before lab.close(), remove what it made with: {cleanup_command(lab)}"
        )
    return "\n".join(lines)


def cleanup_command(lab: Lab) -> str:
    """The ``fleetlab cleanup`` command that removes everything this lab made, even after its kernel died."""
    return f"fleetlab cleanup --prefix {lab.topology.prefix} --backend {lab.backend.name} --yes"


def running_backend() -> Backend | None:
    """The running lab's backend, or None when no lab is running in this kernel."""
    return _current.backend if _current is not None else None


def shutdown() -> None:
    """Close the running lab, if any, so another backend can open."""
    if _current is not None:
        _current.close()

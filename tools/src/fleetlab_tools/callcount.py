"""Count the AWS calls a lab makes, for the real-AWS cost estimate (``cost.py``).

``python -m fleetlab_tools.callcount`` (from the repository root) runs every
instructor notebook in ``labs/solutions/``, ``fleetlab demo`` and the backend
contract suite on in-process moto while ``ProcessCalls`` counts, and writes
``src/fleetlab/backends/data/calls.json``. The fidelity table is measured once
beforehand, so its probe's calls are not counted (``aws`` is never probed).

What is counted, per subject:

* ``calls``: every boto3 call, as ``service.Operation`` (botocore's service
  ids: ``sqs``, ``eventbridge``, ``sfn``, ``dynamodb``, ``s3``, ``sts``),
  with ``fleetlab_instructor.bench.CallCounter`` on each client;
* ``items``: what AWS bills inside a call, from its parameters: PutEvents
  entries, batch and transaction items;
* ``transitions`` and ``executions``: Step Functions state transitions (the
  ``*StateEntered`` events of each execution's history) and executions, read
  just before their state machine is deleted (every lab deletes what it made).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

from fleetlab.backends.prices import CALLS_FILE, REGENERATE
from fleetlab.composition.cost import CallCounts
from fleetlab.core.errors import MeasurementFailed

_HOOK_ID = "fleetlab-callcount"
# operation -> how many billable items its parameters carry
_ITEMS = {
    "PutEvents": lambda p: len(p.get("Entries", [])),
    "BatchWriteItem": lambda p: sum(len(v) for v in p.get("RequestItems", {}).values()),
    "BatchGetItem": lambda p: sum(len(v.get("Keys", [])) for v in p.get("RequestItems", {}).values()),
    "TransactWriteItems": lambda p: len(p.get("TransactItems", [])),
    "TransactGetItems": lambda p: len(p.get("TransactItems", [])),
}


class ProcessCalls:
    """While started, counts the calls of every boto3 client this process creates.

    Histories are read through the client that deletes the state machine, and
    those reads are left out of the counts. ``stop`` returns the counts and
    restores botocore.
    """

    def __init__(self) -> None:
        self._counters: list[Any] = []
        self._clients: list[Any] = []
        self._items: Counter[str] = Counter()
        self._transitions = 0
        self._executions = 0
        self._original: Any = None

    def start(self) -> ProcessCalls:
        import botocore.session

        original = botocore.session.Session.create_client
        self._original = original

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = original(session, *args, **kwargs)
            self._watch(client)
            return client

        botocore.session.Session.create_client = create_client
        return self

    def stop(self) -> CallCounts:
        """Stop counting (again: no harm); the counts so far."""
        import botocore.session

        if self._original is not None:
            botocore.session.Session.create_client = self._original
            self._original = None
        for counter in self._counters:
            counter.__exit__(None, None, None)
        for client in self._clients:
            client.meta.events.unregister("provide-client-params.*.*", unique_id=_HOOK_ID)
        self._clients = []
        calls = Counter(f"{service}.{operation}" for c in self._counters for service, operation in c.calls)
        return CallCounts(calls=dict(calls), items=dict(self._items),
                          transitions=self._transitions, executions=self._executions)

    def _watch(self, client: Any) -> None:
        from fleetlab_tools.counter import CallCounter

        counter = CallCounter(client).__enter__()
        self._counters.append(counter)
        self._clients.append(client)

        # A provide-client-params hook must return None: a value would replace the call's parameters.
        def inspect(params: dict[str, Any], event_name: str = "", **_: Any) -> None:
            _, service, operation = event_name.split(".", 2)
            if operation in _ITEMS:
                self._items[f"{service}.{operation}"] += _ITEMS[operation](params)
            if service == "sfn" and operation == "DeleteStateMachine":
                self._count_executions(client, counter, params["stateMachineArn"])

        client.meta.events.register("provide-client-params.*.*", inspect, unique_id=_HOOK_ID)

    def _count_executions(self, client: Any, counter: Any, state_machine_arn: str) -> None:
        """Executions and state transitions of a state machine about to be deleted (reads not counted)."""
        from botocore.exceptions import ClientError

        already = len(counter.calls)
        try:
            for page in client.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn):
                for execution in page["executions"]:
                    self._executions += 1
                    self._transitions += _state_transitions(client, execution["executionArn"])
        except ClientError:
            pass  # the delete itself will report a missing state machine
        finally:
            del counter.calls[already:]


def _state_transitions(reader: Any, execution_arn: str) -> int:
    pages = reader.get_paginator("get_execution_history").paginate(executionArn=execution_arn)
    return sum(event["type"].endswith("StateEntered") for page in pages for event in page["events"])


def count_notebook(path: Path, *, env: dict[str, str], timeout: float = 600) -> CallCounts:
    """Run ``path`` top to bottom in a fresh kernel (in its folder) while counting; its counts.

    A first cell starts ``ProcessCalls`` and a last one saves the counts; the
    notebook file is not changed. Each cell may run ``timeout`` seconds
    (``grading.executor.NotebookKernel``). Raises MeasurementFailed, naming
    the cell, when one raises, overruns or kills the kernel.
    """
    import nbformat

    from fleetlab_tools.kernel import CellStatus, NotebookKernel

    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="fleetlab-calls-") as scratch:
        result = Path(scratch) / "counts.json"
        notebook.cells.insert(0, nbformat.v4.new_code_cell(
            "from fleetlab_tools.callcount import ProcessCalls\n_fleetlab_calls = ProcessCalls().start()"))
        notebook.cells.append(nbformat.v4.new_code_cell(
            f"import json\nopen({str(result)!r}, 'w').write(json.dumps(_fleetlab_calls.stop().to_dict()))"))
        with NotebookKernel(notebook, env=env, cwd=path.parent) as kernel:
            last = kernel.run_code_cells(timeout)[-1]
        if last.status != CellStatus.OK:  # its index counts the counting cell put first
            raise MeasurementFailed(f"{path.name}: cell {last.index - 1} stopped the count: {last.error}")
        return CallCounts.from_dict(json.loads(result.read_text()))


def count_demo() -> CallCounts:
    """``fleetlab demo`` with its default options, on moto, counted in this process."""
    from rich.console import Console

    from fleetlab.course import demo

    counting = ProcessCalls().start()
    try:
        demo.run(Console(file=io.StringIO()), backend="moto")
    finally:
        counts = counting.stop()
    return counts


def count_contract_suite(repo: Path) -> CallCounts:
    """The backend contract suite (``tests/contract``) on moto, counted in this process."""
    import pytest

    os.environ["FLEETLAB_CONTRACT_BACKENDS"] = "moto"
    counting = ProcessCalls().start()
    try:
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                            str(repo / "tests" / "contract")])
    finally:
        counts = counting.stop()
    if code != 0:
        raise MeasurementFailed(f"the contract suite failed on moto (pytest exit {code}); counts would be wrong")
    return counts


def measure_all(repo: Path) -> dict[str, Any]:
    """Counts for every instructor notebook, the demo and the contract suite, as ``calls.json`` holds them."""
    from fleetlab.backends.backend import open_backend
    from fleetlab.backends.fidelity import probe
    from fleetlab.core.versions import package_version

    with tempfile.TemporaryDirectory(prefix="fleetlab-calls-home-") as home:
        os.environ["FLEETLAB_HOME"] = home
        os.environ.pop("FLEETLAB_ALLOW_REAL_AWS", None)
        warm = open_backend("moto")  # the fidelity probe runs here, uncounted; later runs read its cache
        probe(warm)
        warm.close()
        env = {**os.environ, "FLEETLAB_BACKEND": "moto"}
        subjects: dict[str, Any] = {}
        for path in sorted((repo / "labs" / "solutions").glob("*.ipynb")):
            print(f"counting {path.relative_to(repo)} ...", file=sys.stderr)
            subjects[path.name[:2]] = {"source": str(path.relative_to(repo)), **count_notebook(path, env=env).to_dict()}
        print("counting fleetlab demo ...", file=sys.stderr)
        subjects["demo"] = {"source": "fleetlab demo (default options)", **count_demo().to_dict()}
        print("counting tests/contract ...", file=sys.stderr)
        subjects["contract"] = {"source": "tests/contract on moto", **count_contract_suite(repo).to_dict()}
    return {
        "generated_by": REGENERATE,
        "measured_on": date.today().isoformat(),
        "backend": f"moto {package_version('moto')} (in-process), boto3 {package_version('boto3')}",
        "subjects": subjects,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="repository root (default: here)")
    parser.add_argument("--out", type=Path, default=CALLS_FILE, help=f"where to write (default {CALLS_FILE})")
    args = parser.parse_args(argv)
    if not (args.repo / "labs" / "solutions").is_dir():
        parser.error(f"--repo: {args.repo} has no labs/solutions/; run from the repository root")
    document = measure_all(args.repo.resolve())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

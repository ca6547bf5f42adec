"""A notebook's kernel: one that dies before it answers is started once more, and a second death names its cause."""

import os
from pathlib import Path

import pytest
from fleetlab_tools.kernel import START_ATTEMPTS, CellStatus, KernelStartFailed, NotebookKernel
from fleetlab_tools.kernel_launcher import WARM_VARIABLE
from nbformat.v4 import new_code_cell, new_notebook

# Shadows ipykernel's launcher on the kernel's path: counts its starts, dies on the first ``DIES`` of them with a
# word on standard error (a fault injected into the kernel), then runs the real launcher.
FLAKY_LAUNCHER = """
import pathlib, runpy, sys
starts = pathlib.Path(__file__).with_name("starts")
count = int(starts.read_text()) + 1 if starts.exists() else 1
starts.write_text(str(count))
if count <= {dies}:
    sys.exit("zmq.error.ZMQError: Address already in use (start %d)" % count)
sys.path.remove(str(pathlib.Path(__file__).parent))
runpy.run_module("ipykernel_launcher", run_name="__main__")
"""


def flaky_kernel_env(folder: Path, dies: int) -> dict[str, str]:
    """The kernel's environment, ``folder`` (not its working folder) holding the flaky launcher."""
    folder.mkdir()
    (folder / "ipykernel_launcher.py").write_text(FLAKY_LAUNCHER.format(dies=dies))
    env = {name: value for name, value in os.environ.items() if name != WARM_VARIABLE}
    return {**env, "PYTHONPATH": str(folder)}


def starts(folder: Path) -> int:
    return int((folder / "starts").read_text())


def test_a_kernel_that_dies_before_it_answers_is_started_once_more(tmp_path):
    nb = new_notebook(cells=[new_code_cell("print(6 * 7)")])
    with NotebookKernel(nb, env=flaky_kernel_env(tmp_path / "shadow", dies=1), cwd=tmp_path, startup_timeout=60) as kernel:
        assert kernel.run_cell(0, 60).status == CellStatus.OK
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert starts(tmp_path / "shadow") == 2


def test_a_kernel_that_dies_every_time_is_reported_with_its_last_words(tmp_path):
    kernel = NotebookKernel(new_notebook(), env=flaky_kernel_env(tmp_path / "shadow", dies=START_ATTEMPTS), cwd=tmp_path,
                            startup_timeout=60)
    with pytest.raises(KernelStartFailed, match=r"Kernel died before replying to kernel_info\): it said "
                                                 r"'zmq.error.ZMQError: Address already in use \(start 2\)'"):
        kernel.start()
    assert starts(tmp_path / "shadow") == START_ATTEMPTS
    assert not kernel.alive

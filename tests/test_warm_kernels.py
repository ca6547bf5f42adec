"""Kernels forked from a warm template: each a fresh process of its own, in its own environment, stoppable.

One template serves the module; each test starts the kernels it needs.
"""

import os
import signal

import nbformat
import psutil
import pytest
from fleetlab_tools.kernel import CellStatus, NotebookKernel
from fleetlab_tools.warm_kernels import WarmKernels, WarmKernelsFailed
from nbformat.v4 import new_code_cell, new_notebook

PROBE = "import os, sys, json; print(json.dumps([os.getpid(), os.getppid(), dict(os.environ), os.getcwd(), sys.path]))"


def notebook(*sources):
    return new_notebook(cells=[new_code_cell(source) for source in sources])


@pytest.fixture(scope="module")
def template():
    with WarmKernels(dict(os.environ, TEMPLATE_ONLY="1")) as warm:
        yield warm


def warm_env(template, **extra):
    env = {name: value for name, value in os.environ.items() if name != "TEMPLATE_ONLY"}
    return {**env, **template.environment(), **extra}


def probe(kernel, index=0):
    assert kernel.run_cell(index, 60).status == CellStatus.OK
    return nbformat.from_dict(kernel.nb.cells[index].outputs[0]).text


def test_each_kernel_is_its_own_process_forked_from_the_template_with_its_own_environment(template, tmp_path):
    import json

    seen = []
    for name in ("ada", "bo"):
        folder = tmp_path / name
        folder.mkdir()
        nb = notebook(PROBE, "import fleetlab\nprint(getattr(fleetlab, 'LEFT_BY', 'nobody'))\nfleetlab.LEFT_BY = 'me'")
        with NotebookKernel(nb, env=warm_env(template, HOME=str(folder), LEARNER=name), cwd=folder) as kernel:
            pid, parent, env, cwd, path = json.loads(probe(kernel))
            assert probe(kernel, 1) == "nobody\n"  # the template's modules, never another kernel's changes
        seen.append(pid)
        assert parent == template.pid
        assert (env["HOME"], env["LEARNER"], cwd) == (str(folder), name, str(folder))
        assert "TEMPLATE_ONLY" not in env  # the kernel's environment, not the template's
        assert str(folder) not in path[:1] and "" in path  # sys.path as ipykernel makes it
    assert len(set(seen)) == 2 and template.pid not in seen


def test_a_running_cell_is_interrupted_and_the_kernel_lives_on(template, tmp_path):
    nb = notebook("import time\ntime.sleep(60)", "print('after')")
    with NotebookKernel(nb, env=warm_env(template), cwd=tmp_path) as kernel:
        assert kernel.run_cell(0, 1).status == CellStatus.TIMEOUT
        assert probe(kernel, 1) == "after\n"


def test_plots_display_inline_as_in_a_plain_kernel(template, tmp_path):
    nb = notebook("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.title('t')\nplt.show()")
    with NotebookKernel(nb, env=warm_env(template), cwd=tmp_path) as kernel:
        assert kernel.run_cell(0, 60).status == CellStatus.OK
    assert "image/png" in nb.cells[0].outputs[0]["data"]


def test_a_kernel_dies_with_its_launcher_even_by_sigkill(template, tmp_path):
    import json

    nb = notebook(PROBE)
    kernel = NotebookKernel(nb, env=warm_env(template), cwd=tmp_path).start()
    try:
        forked = psutil.Process(json.loads(probe(kernel))[0])  # held before the kill: the kernel may go at once
        launcher = psutil.Process(kernel._manager.provisioner.pid)
        assert forked.pid != launcher.pid
        launcher.send_signal(signal.SIGKILL)
        forked.wait(timeout=30)  # raises TimeoutExpired if the kernel outlived its launcher
    finally:
        kernel.shutdown()


def test_an_environment_the_template_was_not_imported_under_gets_a_plain_kernel(template, tmp_path):
    import json

    nb = notebook(PROBE)
    env = warm_env(template, MPLBACKEND="agg")  # matplotlib read it at import: the template's modules would not
    with NotebookKernel(nb, env=env, cwd=tmp_path) as kernel:
        pid, parent, *_ = json.loads(probe(kernel))
        assert pid == kernel._manager.provisioner.pid and parent != template.pid


def test_without_a_template_the_kernel_is_a_plain_one(tmp_path):
    import json

    env = {**os.environ}
    env.pop("FLEETLAB_WARM_KERNELS", None)
    with NotebookKernel(notebook(PROBE), env=env, cwd=tmp_path) as kernel:
        pid, *_ = json.loads(probe(kernel))
        assert pid == kernel._manager.provisioner.pid


def test_a_template_that_cannot_import_the_library_says_so():
    with pytest.raises(WarmKernelsFailed, match="did not start"):
        with WarmKernels(dict(os.environ, MPLBACKEND="no-such-backend")):
            pass

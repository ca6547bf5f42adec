"""The polling executor against real kernels (short timeouts; each test starts one kernel)."""

import os
import time

import nbformat
from fleetlab_tools.kernel import NotebookKernel
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def notebook(*sources):
    return new_notebook(cells=[new_code_cell(source) for source in sources])


def test_cells_run_in_order_keeping_outputs_errors_hangs_and_a_dead_kernel(tmp_path):
    nb = notebook(
        "x = 41\nprint('hello')",
        "from IPython.display import display\ndisplay({'text/plain': 'shown'}, raw=True)\nx + 1",
        "1/0",
        "while True:\n    pass",
        "from IPython.display import display\nwhile True:\n    display('flood')",
        "print(x)",
        "import os\nos._exit(3)",
        "print('never')",
    )
    with NotebookKernel(nb, env=dict(os.environ), cwd=tmp_path, grace=5) as kernel:
        # only the two endless cells get the short limit: a busy machine may take over 1 s to import
        hangs = {3, 4}
        runs = [kernel.run_cell(index, timeout=1.0 if index in hangs else 60) for index in range(len(nb.cells))]
        assert not kernel.alive
    # "dead", not "timeout", for cell 6: the death was noticed, not waited out
    assert [run.status for run in runs] == ["ok", "ok", "error", "timeout", "timeout", "ok", "dead", "dead"]
    assert runs[6].seconds < 30
    assert nb.cells[0].outputs[0].text == "hello\n"
    assert [out.output_type for out in nb.cells[1].outputs] == ["display_data", "execute_result"]
    assert runs[2].error == "ZeroDivisionError: division by zero"
    assert runs[3].error == "timed out after 1 s" and runs[3].seconds < 5
    assert runs[4].seconds < 5  # a flood of output still stops on time
    assert nb.cells[5].outputs[0].text == "41\n"  # the interrupted kernel lives on with its state


def test_a_kernel_that_ignores_the_interrupt_is_killed_after_the_grace(tmp_path):
    nb = notebook(
        "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"
    )
    started = time.monotonic()
    with NotebookKernel(nb, env=dict(os.environ), cwd=tmp_path, grace=1.0) as kernel:
        run = kernel.run_cell(0, timeout=1.0)
        assert run.status == "timeout"
        assert not kernel.alive
    assert time.monotonic() - started < 10


def test_the_kernel_gets_exactly_the_environment_and_folder_given(tmp_path):
    nb = notebook(
        "import os\nprint(sorted(os.environ.get(k, '-') for k in ('GIVEN', 'AWS_ACCESS_KEY_ID')), os.getcwd())"
    )
    env = {"PATH": os.environ["PATH"], "GIVEN": "yes", "HOME": str(tmp_path)}
    with NotebookKernel(nb, env=env, cwd=tmp_path) as kernel:
        assert kernel.run_cell(0, timeout=10).status == "ok"
    assert nb.cells[0].outputs[0].text == f"['-', 'yes'] {tmp_path}\n"
    assert nbformat.validate(nb) is None


def test_code_cells_run_in_order_until_the_first_that_is_not_ok(tmp_path):
    nb = notebook("x = 1", "x += 1", "raise ValueError(x)", "print('never')")
    nb.cells.insert(1, new_markdown_cell("# prose is skipped"))
    with NotebookKernel(nb, env=dict(os.environ), cwd=tmp_path) as kernel:
        runs = kernel.run_code_cells(timeout=10)
    assert [(run.index, run.status) for run in runs] == [(0, "ok"), (2, "ok"), (3, "error")]
    assert runs[-1].error == "ValueError: 2" and nb.cells[4].outputs == []

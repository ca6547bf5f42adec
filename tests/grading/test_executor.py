"""The polling executor against real kernels (short timeouts; each test starts one kernel)."""

import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import psutil

import nbformat
from fleetlab_tools.kernel import MAX_CELL_OUTPUT, MAX_ERROR, STDERR_TAIL, NotebookKernel, _Tail
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
    assert not any(run.output_cut for run in runs)  # nothing passed a limit: a dead kernel cuts nothing
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


@contextmanager
def peak_growth():
    """The most this process's resident memory grew above its start while the block ran (bytes), as [value]."""
    me = psutil.Process()
    start, grew, done = me.memory_info().rss, [0], threading.Event()

    def watch():
        while not done.wait(0.02):
            grew[0] = max(grew[0], me.memory_info().rss - start)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield grew
    finally:
        done.set()
        watcher.join()


FLOOD = ("import time\nline = 'x' * 1_000_000\nend = time.monotonic() + 6\nprinted = 0\n"
         "while printed < 500 and time.monotonic() < end:\n    print(line)\n    printed += 1")


def test_what_cells_print_is_cut_and_the_graders_memory_stays_bounded(tmp_path):
    nb = notebook(
        FLOOD,
        "for n in range(3000):\n    print('y' * 1000, flush=True)",
        "raise ValueError('z' * 30_000_000)",
        "print(printed)",
    )
    with peak_growth() as grew, NotebookKernel(nb, env=dict(os.environ), cwd=tmp_path) as kernel:
        runs = [kernel.run_cell(index, timeout=60) for index in range(len(nb.cells))]
    assert [(run.status, run.output_cut) for run in runs] == [("ok", True), ("ok", True), ("error", True),
                                                             ("ok", False)]
    printed = int(nb.cells[3].outputs[0].text) * 1_000_000
    assert printed >= 200_000_000 and grew[0] < printed / 2, (printed, grew[0])
    for cell in nb.cells[:3]:
        texts = [str(output.get("text", "")) + "".join(output.get("traceback", [])) for output in cell.outputs]
        assert texts[-1].startswith("[fleetlab: output cut")
        assert sum(map(len, texts)) <= MAX_CELL_OUTPUT + len(texts[-1])
    kept = sum(len(output.text) for output in nb.cells[1].outputs[:-1])
    assert kept > MAX_CELL_OUTPUT // 2  # in small messages, the head is kept
    assert runs[2].error.startswith("ValueError: zzz") and len(runs[2].error) < MAX_ERROR + 50


def test_only_the_tail_of_what_a_kernel_writes_to_its_stderr_is_kept():
    tail = _Tail(STDERR_TAIL)
    script = "import os\nfor _ in range(50):\n    os.write(2, b'x' * 1_000_000)\nos.write(2, b'\\nlast words\\n')"
    process = subprocess.Popen([sys.executable, "-c", script], stderr=tail.start())
    tail.release()
    assert process.wait(timeout=60) == 0
    kept = tail.text(wait=30)
    assert kept.endswith("\nlast words\n") and len(kept) <= STDERR_TAIL

"""A cell run before the cells it needs says "run the cells above first", in the lab's objects and in IPython."""

import pytest
from IPython.core.interactiveshell import InteractiveShell

import fleetlab
from fleetlab.core.errors import NotRunYet
from fleetlab.core.tracing import Tracer
from fleetlab.course import hints
from fleetlab.services.sqs import dlq


@pytest.fixture
def shell():
    """An IPython shell in this process, for as long as the test runs."""
    made = InteractiveShell.instance()
    yield made
    made.set_custom_exc((), None)
    InteractiveShell.clear_instance()


@pytest.fixture
def lab_in(shell):
    started = fleetlab.start("03", quiet=True)
    yield started
    started.close()


@pytest.mark.parametrize(("cell", "error"), [("parked = []\nparked[0]", "IndexError"),
                                             ("next(r for r in [] if r)", "StopIteration"),
                                             ("print(slow_trace)", "NameError")])
def test_a_lab_session_shows_an_out_of_order_error_with_the_hint(shell, lab_in, capsys, cell, error):
    result = shell.run_cell(cell)
    out = capsys.readouterr().out
    assert type(result.error_in_exec).__name__ == error  # the error itself stays what it was
    assert error in out and hints.HINT in out


def test_other_errors_get_no_hint_and_without_a_lab_nothing_is_installed(shell, capsys):
    shell.run_cell("[][0]")
    assert hints.HINT not in capsys.readouterr().out
    fleetlab.start("03", quiet=True).close()
    shell.run_cell("1 / 0")
    assert hints.HINT not in capsys.readouterr().out
    shell.run_cell("[][0]")
    assert hints.HINT in capsys.readouterr().out


def test_a_handler_installed_by_something_else_is_left_in_place(shell):
    def theirs(self, etype, value, tb, tb_offset=None):
        return None

    shell.set_custom_exc((KeyError,), theirs)
    assert not hints.install(shell)
    assert shell.custom_exceptions == (KeyError,)


def test_a_trace_not_run_yet_says_so():
    with pytest.raises(NotRunYet) as raised:
        Tracer().timeline("alert-8")[0]
    assert isinstance(raised.value, IndexError)
    assert str(raised.value) == ("no item [0] in the hops of trace 'alert-8': it holds 0; "
                                 "if the cells above fill it, run them first")


def test_an_empty_dlq_says_nothing_is_parked_yet_and_the_hint_is_not_added_twice(shell, lab_in, capsys):
    dlq_url = lab_in.topology.queues["researcher"].dlq_url
    with pytest.raises(NotRunYet, match=r"no item \[0\] in the records parked in fl-03-\w+-researcher-dlq: it holds 0"):
        dlq.parked(lab_in.backend, dlq_url)[0]
    shell.user_ns.update(dlq=dlq, lab=lab_in, url=dlq_url)
    shell.run_cell("dlq.parked(lab.backend, url)[0]")
    out = capsys.readouterr().out
    assert "run them first" in out and hints.HINT not in out

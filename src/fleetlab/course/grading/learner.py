"""Tell an unfinished answer, and the learner's code, from everything else.

An exercise is unfinished while its answer is ``...`` (or holds one), is a
function whose body is only ``...``, or raises NotImplementedError from the
learner's own code. Unfinished work earns a "not yet", never a traceback.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import sys
import sysconfig
import textwrap
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_FLEETLAB_DIR = str(Path(__file__).resolve().parents[2])
_PYTHON_DIRS = tuple({sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")})


def is_unfinished(answer: Any, depth: int = 2) -> bool:
    """True for ``...``, a dict/list/tuple holding ``...``, or a stub function or class."""
    if answer is Ellipsis:
        return True
    if inspect.isfunction(answer) or inspect.ismethod(answer):
        return _body_is_ellipsis(answer)
    if inspect.isclass(answer):
        return any(_body_is_ellipsis(member) for member in vars(answer).values() if inspect.isfunction(member))
    if depth and isinstance(answer, dict):
        return any(is_unfinished(value, depth - 1) for value in answer.values())
    if depth and isinstance(answer, (list, tuple)):
        return any(is_unfinished(item, depth - 1) for item in answer)
    return False


def learner_frames(exc: BaseException, library_files: Iterable[str] = ()) -> list[traceback.FrameSummary]:
    """The frames of ``exc``'s traceback that run the learner's code, outermost first.

    Library code is fleetlab itself, the standard library, installed packages
    and ``library_files`` (the check's own harness module).
    """
    library = (_FLEETLAB_DIR, *_PYTHON_DIRS, *library_files)
    here = [frame for frame in traceback.extract_tb(exc.__traceback__) if not _is_library(frame.filename, library)]
    return here + list(vars(exc).get(REMOTE_FRAMES, ()))


def learner_waiting(
    thread_ids: Iterable[int], wait_files: Iterable[str], library_files: Iterable[str] = ()
) -> traceback.FrameSummary | None:
    """The learner's frame that is waiting right now by calling ``wait_files`` (the clock) itself, or None.

    Looks at the stacks of these threads: a learner's frame counts only when
    the frame it called is in one of ``wait_files``. A learner's code that
    waits through the library (a DynamoDB call under latency) is not blamed.
    """
    library = (_FLEETLAB_DIR, *_PYTHON_DIRS, *library_files)
    waits = tuple(wait_files)
    running = sys._current_frames()
    for ident in thread_ids:
        if ident not in running:
            continue
        stack = traceback.extract_stack(running[ident])
        for caller, called in zip(stack, stack[1:]):
            if not _is_library(caller.filename, library) and called.filename in waits:
                return caller
    return None


def raised_by_learner_stub(exc: BaseException, library_files: Iterable[str] = ()) -> bool:
    """True when the learner's own code raised NotImplementedError (an unfinished stub).

    A NotImplementedError from a library the learner called (moto raises one
    for calls it does not emulate) is an ordinary error, not a stub.
    """
    if vars(exc).get(REMOTE_STUB):
        return True
    if not isinstance(exc, NotImplementedError):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1] in learner_frames(exc, library_files)


EMULATOR_LACKS = "has not been implemented"
"""moto's words when a call it does not emulate is made."""


def describe_learner_error(exc: BaseException, frames: list[traceback.FrameSummary]) -> str:
    """``your code raised ZeroDivisionError: division by zero (in handle, line 4)``, and for an API call the
    emulator lacks (moto's NotImplementedError) what that means."""
    where = frames[-1]
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    said = f"your code raised {message} (in {where.name}, line {where.lineno})"
    if isinstance(exc, NotImplementedError) and EMULATOR_LACKS in str(exc):
        said += (": this backend does not emulate that call, though AWS has it (lab.fidelity() says which calls); "
                 "catch the error and fall back on calls it has, as the lab shows")
    return said



def _body_is_ellipsis(function: Any) -> bool:
    function = getattr(function, "__func__", function)
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = definition.body
    if body and _is_constant(body[0], str):
        body = body[1:]  # a docstring does not finish an exercise
    return len(body) == 1 and _is_constant(body[0], type(Ellipsis))


def _is_constant(statement: ast.stmt, kind: type) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, kind)
    )


def _is_library(filename: str, library: tuple[str, ...]) -> bool:
    if filename.startswith("<"):
        return not filename.startswith("<ipython-input")
    return filename.startswith(library)


REMOTE_FRAMES = "__fleetlab_remote_frames__"
"""Set on an exception rebuilt from the process that ran the learner's code: its learner's frames there."""
REMOTE_STUB = "__fleetlab_remote_stub__"
"""Set on an exception rebuilt from the process that ran the learner's code: the learner's own stub raised it."""
INSTRUCTOR_PACKAGE = "fleetlab_instructor"
"""The instructor's side of the course: no answer may come from it."""
ANSWERS_ATTRIBUTE = "__fleetlab_answers__"
"""Set on a library function that is itself the answer an exercise asks for: the check ids it answers."""


def borrowed_answer(answer: Any, check_id: str, depth: int = 3) -> str | None:
    """The name of what ``answer`` takes that it must not, or None when it is the learner's own.

    Taken is anything from the instructor's package, and any library function
    marked (``ANSWERS_ATTRIBUTE``) as the answer to ``check_id``. Looks at the
    answer itself (a function, class or module), the items of a dict, list or
    tuple answer, and the globals and closure a function answer reaches by
    name, ``depth`` levels down.
    """
    module = answer.__name__ if inspect.ismodule(answer) else getattr(answer, "__module__", None)
    name = f"{module}.{getattr(answer, '__qualname__', '')}".rstrip(".")
    if isinstance(module, str) and _in_instructor(module):
        return f"{name}, from the instructor's package"
    if check_id in _answers_of(answer):
        return f"{name}, the library's own answer to {check_id}"
    if not depth:
        return None
    if isinstance(answer, dict):
        return _first_borrowed(answer.values(), check_id, depth - 1)
    if isinstance(answer, (list, tuple)):
        return _first_borrowed(answer, check_id, depth - 1)
    if inspect.isfunction(answer):
        return _first_borrowed(_reached_by(answer), check_id, depth - 1)
    return None



def _in_instructor(module: str) -> bool:
    return module == INSTRUCTOR_PACKAGE or module.startswith(INSTRUCTOR_PACKAGE + ".")


def _answers_of(value: Any) -> tuple[str, ...]:
    try:
        marked = getattr(value, ANSWERS_ATTRIBUTE, ())
    except Exception:  # an object whose attribute lookup itself fails is no marked function
        return ()
    return marked if isinstance(marked, tuple) else ()


def _first_borrowed(values: Iterable[Any], check_id: str, depth: int) -> str | None:
    return next((found for value in values if (found := borrowed_answer(value, check_id, depth))), None)


def _reached_by(function: Any) -> list[Any]:
    """What ``function`` (and the functions nested in it) names from its globals, and its closure's values."""
    names: set[str] = set()
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [const for const in code.co_consts if inspect.iscode(const)]
    reached = [function.__globals__[name] for name in sorted(names) if name in function.__globals__]
    for cell in function.__closure__ or ():
        with contextlib.suppress(ValueError):  # an empty cell
            reached.append(cell.cell_contents)
    return reached

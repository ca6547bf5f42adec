"""Tell an unfinished answer, and the learner's code, from everything else.

An exercise is unfinished while its answer is ``...`` (or holds one), is a
function whose body is only ``...``, or raises NotImplementedError from the
learner's own code. Unfinished work earns a "not yet", never a traceback.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import sys
import sysconfig
import textwrap
import traceback
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fleetlab.course.grading.results import capped

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


def answer_codes(answer: Any, depth: int = 3) -> frozenset[types.CodeType]:
    """The code objects that are ``answer``'s own, whatever file they claim to come from.

    A function's code and the code nested in it, the methods and properties
    of a class (and of its bases from the same module), the items of a dict, list or tuple,
    and, ``depth`` levels down, the functions and classes a function names
    from its own module's globals or holds in its closure. Reads no attribute
    of any other object (a proxy's reads would run code elsewhere).
    """
    codes: set[types.CodeType] = set()
    seen: set[int] = set()

    def visit(value: Any, depth: int) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, types.MethodType):
            value = value.__func__
        if isinstance(value, functools.partial):
            visit(value.func, depth)
        elif isinstance(value, types.FunctionType):
            codes.update(_nested_codes(value.__code__))
            if depth:
                for reached in _reached_by(value):
                    if _same_home(reached, value):
                        visit(reached, depth - 1)
        elif isinstance(value, type):
            for cls in value.__mro__:
                if cls is value or (cls is not object and cls.__module__ == value.__module__):
                    for member in vars(cls).values():
                        parts = (member.fget, member.fset, member.fdel) if isinstance(member, property) else (member,)
                        for part in parts:
                            visit(getattr(part, "__func__", part), depth)
        elif depth and isinstance(value, dict):
            for item in value.values():
                visit(item, depth - 1)
        elif depth and isinstance(value, (list, tuple)):
            for item in value:
                visit(item, depth - 1)

    visit(answer, depth)
    return frozenset(codes)


def learner_frames(
    exc: BaseException, codes: Iterable[types.CodeType] = (), library_files: Iterable[str] = (),
    *, callers: Iterable[types.CodeType] = (),
) -> list[traceback.FrameSummary]:
    """The frames of ``exc``'s traceback that run the learner's code, outermost first.

    The learner's code starts at the first frame running one of ``codes``
    (``answer_codes``), or at the frame called by one running ``callers``
    (where another process's calls enter the answer). From there on, the
    frames are the learner's unless their file is library code (fleetlab
    itself, the standard library, installed packages and ``library_files``,
    the check's harness) and their code is not one of ``codes``; when every
    one is, the first. An exception raised by the call into the answer
    itself (wrong arguments) is the learner's, with a frame of line 0
    (``CALLED``). An exception that never entered the answer so is the
    learner's only where a frame runs a file that is not library code (a
    notebook's cell). Frames carried from the answer's process
    (``REMOTE_FRAMES``) follow.
    """
    codes, callers = frozenset(codes), frozenset(callers)
    library = (_FLEETLAB_DIR, *_PYTHON_DIRS, *library_files)
    walked = [(tb.tb_frame.f_code, _summary(tb)) for tb in _tracebacks(exc.__traceback__)]
    entry = next((at for at, (code, _) in enumerate(walked) if code in codes), None)
    if entry is None:
        entry = next((at + 1 for at, (code, _) in enumerate(walked) if code in callers), None)
    if entry is None:  # never entered as called: still the learner's where a frame runs a file of theirs
        here = [frame for _, frame in walked if not _is_library(frame.filename, library)]
    elif entry == len(walked):
        here = [traceback.FrameSummary(CALLED, 0, walked[-1][1].name, lookup_line=False)]
    else:
        here = [frame for code, frame in walked[entry:] if code in codes or not _is_library(frame.filename, library)]
        here = here or [walked[entry][1]]
    return here + list(vars(exc).get(REMOTE_FRAMES, ()))


CALLED = "<the call into your code>"
"""The file of the frame ``learner_frames`` gives an exception the call into the answer raised before it ran."""


def _tracebacks(tb: types.TracebackType | None) -> Iterable[types.TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _summary(tb: types.TracebackType) -> traceback.FrameSummary:
    code = tb.tb_frame.f_code
    return traceback.FrameSummary(code.co_filename, tb.tb_lineno, code.co_name)


def _nested_codes(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested_codes(const)


def _same_home(value: Any, function: types.FunctionType) -> bool:
    """True when ``value``, reached from ``function``, was defined where ``function`` was (the learner's module)."""
    if isinstance(value, types.FunctionType):
        return value.__globals__ is function.__globals__
    return isinstance(value, type) and value.__module__ == function.__module__


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


def raised_by_learner_stub(
    exc: BaseException, codes: Iterable[types.CodeType] = (), library_files: Iterable[str] = (),
    *, callers: Iterable[types.CodeType] = (),
) -> bool:
    """True when the learner's own code raised NotImplementedError (an unfinished stub).

    A NotImplementedError from a library the learner called (moto raises one
    for calls it does not emulate) is an ordinary error, not a stub. The
    arguments are ``learner_frames``'.
    """
    if vars(exc).get(REMOTE_STUB):
        return True
    if not isinstance(exc, NotImplementedError) or exc.__traceback__ is None:
        return False
    innermost = _summary(list(_tracebacks(exc.__traceback__))[-1])
    return innermost in learner_frames(exc, codes, library_files, callers=callers)


def misfit(answer: Any, function: str, parameters: str) -> str:
    """Why ``answer`` cannot take the ``parameters`` the exercise asks of ``function`` (``"sqs, dlq_url"``),
    passed in that order; "" when it can, or when its parameters cannot be read without running other code
    (only Python functions and methods are read)."""
    if not parameters or not isinstance(answer, (types.FunctionType, types.MethodType)):
        return ""
    asked = [name.strip() for name in parameters.split(",")]
    try:
        signature = inspect.signature(answer)
    except Exception:  # a signature set by the answer itself that cannot be read: the cases will tell
        return ""
    try:
        signature.bind(*asked)
    except TypeError as exc:
        return (f"your {function} takes {capped(str(signature), 200)}, but the exercise asks for "
                f"{function}({parameters}) and the check calls it with those {len(asked)} values in that order "
                f"({exc}); give it exactly these parameters")
    return ""


EMULATOR_LACKS = "has not been implemented"
"""moto's words when a call it does not emulate is made."""


def describe_learner_error(exc: BaseException, frames: list[traceback.FrameSummary]) -> str:
    """``your code raised ZeroDivisionError: division by zero (in handle, line 4)``, and for an API call the
    emulator lacks (moto's NotImplementedError) what that means."""
    where = frames[-1]
    text = capped(str(exc))
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    said = f"your code raised {message}"
    if where.filename != CALLED:
        said += f" (in {where.name}, line {where.lineno})"
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

"""An answer that calls the library function implementing its own exercise earns nothing for that check.

A check names those functions (``register(implemented_by=...)``, dotted
paths). They are recognised by their code objects, so an alias, a lazy
import inside the answer or a wrapper around them is caught as surely as a
direct call: a profile hook (``sys.setprofile`` in the thread that runs the
answer, ``threading.setprofile`` for the threads started meanwhile) notes
every call of one of those code objects.

Where the hook is on: in the notebook only while the harness calls the
answer (``Watch.wrap``), so the harness itself may use the library; in the
grader's answer process, where nothing but the answer's code runs, for the
whole life of the process, reset each time an answer is loaded there
(``watch_answer_process``, ``expect``, ``taken``). There the watch alone would
not do: the answer's own code could turn it off (``sys.setprofile(None)``,
the watch's state) or run the module again for fresh copies
(``importlib.reload``). So ``expect`` also disarms the functions themselves:
their code is replaced by one that raises ``ShortcutRefused`` (the original
is kept nowhere), and an audit hook, which no Python code can remove,
refuses to run their modules' code again.

An answer that is data (a pattern dict) was computed before any case ran:
there the notebook cells that define it are read, in the kernel from its
history (``called_in_cells``, for ``check()``), and by the grader from the
notebook's own text (``called_in_source``), which no kernel code can change.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import CodeType
from typing import Any

from fleetlab.course.grading.registry import Check
from fleetlab.course.grading.elsewhere import process_of
from fleetlab.course.grading.results import CheckResult, refused


def diagnosis(names: Sequence[str]) -> str:
    """What the learner reads when the answer called ``names``."""
    listed = " and ".join(f"`{name}`" for name in names)
    which = "the library's own answer to it" if len(names) == 1 else "the library's own answers to it"
    return (f"this exercise asks for your own code, and your answer calls {listed}, {which}, so it scores "
            "nothing; write the logic yourself (the library's version is there to compare with once yours passes)")


def refused_shortcut(check: Check, names: Sequence[str], *, graded: bool) -> CheckResult:
    """The verdict on an answer that called ``names`` (implementing functions of ``check``): nothing scored."""
    return refused(check, diagnosis(names), graded=graded)


@functools.lru_cache(maxsize=None)
def _resolved(paths: tuple[str, ...]) -> Mapping[CodeType, str]:
    codes: dict[CodeType, str] = {}
    for path in paths:
        codes[_code_of(path)] = path
    return codes


def implementing(check: Check) -> Mapping[CodeType, str]:
    """The code objects of the functions ``check`` declares ``implemented_by``, each to its dotted path."""
    return _resolved(check.implemented_by)


def _code_of(path: str) -> CodeType:
    """The code object of the function, method or property at dotted ``path``; LookupError when there is none."""
    return _function_of(path).__code__


def _function_of(path: str) -> Any:
    """The function (of a method or property: its underlying one) at dotted ``path``; LookupError when none."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            target = inspect.getattr_static(target, name, None)
        target = getattr(target, "__func__", getattr(target, "fget", target))  # a class- or staticmethod, a property
        function = inspect.unwrap(target) if target is not None else None
        if isinstance(getattr(function, "__code__", None), CodeType):
            return function
        break
    raise LookupError(f"implemented_by names {path!r}, which is no function of the library")


# --- the watch ------------------------------------------------------------------------------------------------------


class Watch:
    """The implementing functions of one check that the answer's code called while watched (``hits``, in order)."""

    def __init__(self, codes: Mapping[CodeType, str]) -> None:
        self._hits: dict[str, None] = {}
        self.reset(codes)

    @property
    def hits(self) -> list[str]:
        return list(self._hits)

    def reset(self, codes: Mapping[CodeType, str]) -> None:
        """Watch for ``codes`` from now on, and forget what was seen."""
        self._keep = tuple(codes)  # the ids below stay theirs
        self._codes = {id(code): name for code, name in codes.items()}
        self._hits = {}

    def saw(self, frame: Any, event: str, arg: Any) -> None:
        """A profile hook: note a call of one of the watched code objects."""
        if event == "call" and (name := self._codes.get(id(frame.f_code))) is not None:
            self._hits[name] = None

    def wrap(self, answer: Any) -> Any:
        """``answer`` watched while it is called; itself when nothing is watched, it is no function, or it runs in
        another process (its own watch is there)."""
        if not self._codes or not callable(answer) or isinstance(answer, type) or process_of(answer) is not None:
            return answer

        @functools.wraps(answer)
        def watched(*args: Any, **kwargs: Any) -> Any:
            with _watching(self):
                return answer(*args, **kwargs)

        return watched


_active: list[Watch] = []
_active_guard = threading.Lock()
_threads_before: list[Any] = [None]  # the new threads' profile hook before the first watch began


def _started_meanwhile(frame: Any, event: str, arg: Any) -> None:
    for watch in tuple(_active):
        watch.saw(frame, event, arg)


@contextlib.contextmanager
def _watching(watch: Watch) -> Iterator[None]:
    """Watch this thread, and every thread started until the block ends, for ``watch``."""
    before = sys.getprofile()
    with _active_guard:
        if not _active:
            _threads_before[0] = threading.getprofile()
            threading.setprofile(_started_meanwhile)
        _active.append(watch)
    sys.setprofile(watch.saw)
    try:
        yield
    finally:
        sys.setprofile(before)
        with _active_guard:
            _active.remove(watch)
            if not _active:
                threading.setprofile(_threads_before[0])


# --- in the grader's answer process -----------------------------------------------------------------------------------

_process_watch = Watch({})


def watch_answer_process() -> None:
    """Watch this thread and every thread started from now on (the answer process, before it serves a call)."""
    threading.setprofile(_process_watch.saw)
    sys.setprofile(_process_watch.saw)


class ShortcutRefused(Exception):
    """Raised in the grader's answer process by a disarmed implementing function, or a rerun of its module."""


_disarmed: list[tuple[str, ...]] = []


def expect(implemented_by: tuple[str, ...]) -> None:
    """From now on, the ``implemented_by`` functions raise ShortcutRefused and their calls are noted (what was noted
    is forgotten). Once per answer process (one check's answers): a process that disarmed other functions
    raises RuntimeError. Stops an answer that turns the watch off and then calls one (it raises instead of
    answering), and one that reruns their module for fresh copies (``importlib.reload``: refused)."""
    if _disarmed and _disarmed[0] != implemented_by:
        raise RuntimeError("an answer process disarms one check's implementing functions: start a fresh one")
    if not _disarmed:
        if implemented_by:
            _disarm(implemented_by)
        _disarmed.append(implemented_by)
    _process_watch.reset({_function_of(path).__code__: path for path in implemented_by})


def _disarm(implemented_by: tuple[str, ...]) -> None:
    """Replace each function's code with a tripwire, and refuse from now on to run their modules' code again."""
    files = set()
    for path in implemented_by:
        function = _function_of(path)
        files.add(function.__code__.co_filename)
        function.__code__ = _tripwire(path)
    refuse_rerun: dict[str, Any] = {}
    exec(compile(_RERUN_REFUSED.format(files=tuple(sorted(files))), "<fleetlab: reruns refused>", "exec"),
         vars(sys.modules[__name__]), refuse_rerun)
    sys.addaudithook(refuse_rerun["refuse_rerun"])


def _tripwire(path: str) -> CodeType:
    """Code that takes any arguments and raises ShortcutRefused naming ``path`` (it runs with the globals of the
    function it replaces: it finds the exception by importing this module)."""
    source = (f"def tripped(*args, **kwargs):\n"
              f"    raise __import__({__name__!r}, fromlist=['_']).ShortcutRefused({diagnosis([path])!r})\n")
    made: dict[str, Any] = {}
    exec(compile(source, f"<fleetlab: {path} refused>", "exec"), {}, made)
    return made["tripped"].__code__


_RERUN_REFUSED = '''def refuse_rerun(event, args):
    if event == "exec" and args[0].co_filename in {files!r}:
        raise ShortcutRefused("this exercise asks for your own code: running the library's module that implements "
                              "it again (importlib.reload, a fresh import) is refused; write the logic yourself")
    if event == "object.__setattr__" and args[1] == "__code__":
        raise ShortcutRefused("this exercise asks for your own code: replacing a function's code is refused in "
                              "the grader; write the logic yourself")
'''
"""The audit hook. Its files are constants of its code, and replacing a function's code is refused: no answer can
change what it refuses (nor put a disarmed function's code back)."""


def taken() -> list[str]:
    """The implementing functions called since the last ``expect``."""
    return _process_watch.hits


# --- an answer that is data: the cells that define it ---------------------------------------------------------------


def called_in_cells(check: Check, namespace: Mapping[str, Any]) -> list[str]:
    """The implementing functions of ``check`` that the notebook's cells call to build its data answer.

    The cells are IPython's history (``In`` in ``namespace``). What builds a
    value is the statements that bind or change its name, from its last
    binding on, and, the same way, the notebook variables those statements
    read. A call there counts when what it calls, looked up in
    ``namespace``, is an implementing function or a notebook function that
    names one.
    """
    codes = implementing(check)
    cells = namespace.get("In")
    if not (check.answer and codes and isinstance(cells, list)):
        return []
    statements = [statement for tree in _parsed(cells) for statement in _statements(tree)]
    found: list[str] = []
    for statement in _building(statements, check.answer, namespace):
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                for code in _codes_reached(_callee(node.func, namespace)):
                    if code in codes and codes[code] not in found:
                        found.append(codes[code])
    return found


def _parsed(cells: list[Any]) -> list[ast.Module]:
    trees = []
    for source in cells:
        with contextlib.suppress(SyntaxError, ValueError, TypeError):
            trees.append(ast.parse(source))
    return trees


def _statements(tree: ast.AST) -> list[ast.stmt]:
    """The simple statements of ``tree``, in order, those inside blocks (``if``, ``for``, ``with``) included."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
            found.append(node)
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def _building(statements: list[ast.stmt], name: str, namespace: Mapping[str, Any]) -> list[ast.stmt]:
    """The statements that build ``name`` and the notebook variables they read (see ``called_in_cells``)."""
    wanted, seen, building = [name], set(), []
    while wanted:
        current = wanted.pop()
        if current in seen:
            continue
        seen.add(current)
        touching = [statement for statement in statements if _changes(statement, current)]
        bound = [index for index, statement in enumerate(touching) if _binds(statement, current)]
        for statement in touching[bound[-1] if bound else 0:]:
            building.append(statement)
            wanted += [node.id for node in ast.walk(statement) if isinstance(node, ast.Name)
                       and isinstance(node.ctx, ast.Load) and node.id in namespace
                       and not callable(namespace[node.id]) and not inspect.ismodule(namespace[node.id])]
    return building


def _targets(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return [statement.target]
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return [statement.value.func]  # name.update(...): a method that changes it
    return []


def _names_of(target: ast.expr) -> list[str]:
    """The variables an assignment target (or a method call's receiver) stands on."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for item in target.elts for name in _names_of(item)]
    while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
        target = target.value
    return [target.id] if isinstance(target, ast.Name) else []


def _changes(statement: ast.stmt, name: str) -> bool:
    return any(name in _names_of(target) for target in _targets(statement))


def _binds(statement: ast.stmt, name: str) -> bool:
    """``name = ...`` itself, not a change of what it holds."""
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
        return False
    plain = [target for target in _targets(statement) if isinstance(target, (ast.Name, ast.Tuple, ast.List))]
    return any(isinstance(node, ast.Name) and node.id == name for target in plain for node in ast.walk(target)
               if not isinstance(node.ctx, ast.Load))


def _callee(node: ast.expr, namespace: Mapping[str, Any]) -> Any:
    """What ``node`` names: a notebook name, or an attribute of a module or class it names (nothing is run)."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        base = node.value.func if isinstance(node.value, ast.Call) else node.value  # Class(...).method(): the class
        owner = _callee(base, namespace)
        if inspect.ismodule(owner) or inspect.isclass(owner):
            with contextlib.suppress(AttributeError):
                return inspect.getattr_static(owner, node.attr)
    return None


def _codes_reached(value: Any, depth: int = 2) -> list[CodeType]:
    """The code of ``value`` (a function), and of the functions a notebook function names (directly or as a
    module's attribute), ``depth`` levels down."""
    value = getattr(value, "__func__", value)
    code = getattr(inspect.unwrap(value), "__code__", None) if callable(value) else None
    if not isinstance(code, CodeType):
        return []
    reached = [code]
    if depth and inspect.isfunction(value) and value.__module__ == "__main__":
        names: set[str] = set()
        stack = [code]
        while stack:
            current = stack.pop()
            names.update(current.co_names)
            stack += [const for const in current.co_consts if inspect.iscode(const)]
        for name in sorted(names & value.__globals__.keys()):
            named = value.__globals__[name]
            if inspect.ismodule(named):
                reached += [found for attribute in sorted(names) if (found := _code_in(named, attribute))]
            else:
                reached += _codes_reached(named, depth - 1)
    return reached


def _code_in(module: Any, name: str) -> CodeType | None:
    value = getattr(inspect.getattr_static(module, name, None), "__code__", None)
    return value if isinstance(value, CodeType) else None


# --- an answer that is data, read by the grader from the notebook's own text ------------------------------------------


def called_in_source(check: Check, cells: Sequence[str]) -> list[str]:
    """``called_in_cells`` read from the notebook's code cells as the grader holds them, not from a kernel's state
    (its own code can clear ``In`` or change the hand-in): the implementing functions of ``check`` that the
    statements building its data answer call, directly or through a notebook function, by a name the cells'
    imports give them (or their own name)."""
    if not (check.answer and check.implemented_by):
        return []
    trees = _parsed(list(cells))
    imported = _imports(trees)
    defined = {node.name: node for tree in trees for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    statements = [statement for tree in trees for statement in _statements(tree)]
    variables = {name: None for statement in statements for target in _targets(statement)
                 for name in _names_of(target)}  # every one followed: the text says nothing of their values
    found: list[str] = []
    for statement in _building(statements, check.answer, variables):
        for called in _called(statement, imported, defined, depth=2):
            found += [path for path in check.implemented_by if _names(called, path) and path not in found]
    return found


def _imports(trees: Sequence[ast.Module]) -> dict[str, str]:
    """Each name the cells' imports bind, to the dotted path it stands for."""
    bound: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _called(tree: ast.AST, imported: Mapping[str, str], defined: Mapping[str, ast.AST], depth: int) -> list[str]:
    """The dotted names ``tree`` calls, and those the notebook functions it calls call, ``depth`` levels down."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func, imported)
            if name in defined and depth:
                names += _called(defined[name], imported, defined, depth - 1)
            elif name in ("eval", "exec") and node.args and isinstance(node.args[0], ast.Constant) and depth:
                names += [called for tree in _parsed([str(node.args[0].value)])
                          for called in _called(tree, imported, defined, depth - 1)]  # code given as text
            elif name:
                names.append(name)
    return names


def _dotted(node: ast.expr, imported: Mapping[str, str]) -> str:
    if isinstance(node, ast.Name):
        return imported.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value.func if isinstance(node.value, ast.Call) else node.value, imported)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _names(called: str, path: str) -> bool:
    """Whether the dotted name ``called`` is the function at ``path``: that path, or its own name (with its class,
    for a method), alone or after a module or package that re-exports it."""
    parts = path.split(".")
    own = ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]
    return called == path or called == own or (called.endswith("." + own) and called.startswith("fleetlab."))

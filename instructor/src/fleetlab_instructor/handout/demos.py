"""Which cells grading may leave out: the course's demonstrations that no answer needs.

A lab's experiments, plots and widgets cost most of its run, and the judge
calls the answers with its own inputs: an answer depends on its kernel only
through the names it reads. A code cell tagged ``DEMO_TAG`` (in the
instructor's notebook; ``fleetlab assign`` keeps the tag in the student's)
is skipped unless it defines a name that an answer is called by, or that a
cell which runs reads: read anywhere in it, function bodies included, and
transitively. Every untagged cell runs, so a learner's own cells always do.

The reading is static (``ast``) and errs towards running a cell: a demo
that assigns to ``x.attr`` or ``x[key]`` defines ``x``; a cell that cannot
be parsed, or that reaches names dynamically (``globals()``, ``eval``,
``exec``, ``import *``...), keeps every demo. Side effects a demo has
through a method call are not seen: tag only cells whose effects nothing
graded relies on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from IPython.core.inputtransformer2 import TransformerManager
from nbformat import NotebookNode

DEMO_TAG = "demo"
"""The cell tag the course puts on a demonstration: a cell grading may skip."""
DYNAMIC = frozenset({"globals", "locals", "eval", "exec", "__import__", "get_ipython", "__builtins__"})
"""Names through which a cell may read or write any global: a reader of one keeps every demo."""
SCOPE_READERS = frozenset({"vars", "dir"})
"""Builtins that read every global when called with no argument (``vars(config)`` reads ``config`` only)."""


@dataclass(frozen=True)
class _Names:
    defined: frozenset[str]
    read: frozenset[str]


def cells_to_skip(nb: NotebookNode, answer_names: Iterable[str]) -> frozenset[int]:
    """Indexes of the demo cells of ``nb`` that neither define an answer nor anything a running cell reads."""
    code = {index: cell for index, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.source.strip()}
    demos = {index for index, cell in code.items() if DEMO_TAG in cell.metadata.get("tags", ())}
    names = {index: _names_of(cell.source) for index, cell in code.items()}
    if any(names[index] is None for index in code):
        return frozenset()
    running = set(code) - demos
    needed = set(answer_names)
    while True:
        needed |= {name for index in running for name in names[index].read}
        if needed & DYNAMIC:
            return frozenset()
        more = {index for index in demos - running if names[index].defined & needed}
        if not more:
            return frozenset(demos - running)
        running |= more


def _names_of(source: str) -> _Names | None:
    """The global names a cell may define and those it may read; None when it cannot be read."""
    tree = _parsed(source)
    if tree is None:
        return None
    reader = _Reader()
    reader.visit(tree)
    return _Names(frozenset(reader.defined), frozenset(reader.read))


class _Reader(ast.NodeVisitor):
    """Collects a cell's global stores and loads; a function's or comprehension's own locals are neither."""

    def __init__(self) -> None:
        self.defined: set[str] = set()
        self.read: set[str] = set()
        self._scopes: list[set[str]] = []

    def _local(self, name: str) -> bool:
        return any(name in scope for scope in self._scopes)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if not self._local(node.id):
                self.read.add(node.id)
        elif not self._scopes:
            self.defined.add(node.id)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.defined.add(node.target.id)  # in a comprehension it still binds the enclosing scope's name
        self.visit(node.value)

    def visit_Global(self, node: ast.Global) -> None:
        self.defined |= set(node.names)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        if any(alias.name == "*" for alias in node.names):
            self.read.add("__import__")  # a star import defines names no one can list
        if not self._scopes:
            self.defined |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}

    visit_ImportFrom = visit_Import

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in SCOPE_READERS and not (node.args or node.keywords):
            self.read.add("globals")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute | ast.Subscript) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.defined |= {name for name in _base_names(node) if not self._local(name)}
        self.generic_visit(node)

    visit_Subscript = visit_Attribute

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not self._scopes:
            self.defined.add(node.name)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if not self._scopes:
            self.defined.add(node.name)
        for outer in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
            if outer is not None:
                self.visit(outer)
        self._within(_parameters(node.args) | _bound_in(node.body), node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for outer in (*node.args.defaults, *node.args.kw_defaults):
            if outer is not None:
                self.visit(outer)
        self._within(_parameters(node.args), [node.body])

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        targets = {name.id for generator in node.generators for name in ast.walk(generator.target)
                   if isinstance(name, ast.Name)}
        self._within(targets, list(ast.iter_child_nodes(node)))

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

    def _within(self, names: set[str], body: list[ast.AST]) -> None:
        """Visit ``body`` in a new scope whose locals are ``names``."""
        self._scopes.append(names)
        for node in body:
            self.visit(node)
        self._scopes.pop()


def _parameters(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {arg.arg for arg in every if arg is not None}


def _base_names(node: ast.expr) -> set[str]:
    """The name an attribute or item store changes (``a`` of ``a.b[c].d = ...``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return {node.id} if isinstance(node, ast.Name) else set()


def _bound_in(body: list[ast.stmt]) -> set[str]:
    """The names a function body binds, hence its locals (less those it declares global)."""
    bound, declared = set(), set()
    for node in (inner for statement in body for inner in ast.walk(statement)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared |= set(node.names)
    return bound - declared


def _parsed(source: str) -> ast.Module | None:
    """The cell as Python, IPython's magics and shell escapes turned into calls; None when it does not parse."""
    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return None

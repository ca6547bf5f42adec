"""Memoise pure functions that in-process moto calls again and again, and take its slowest needless detours (issue 30).

Eight computations moto repeats with the same arguments, each a pure
function of them (caching the first three took about a third off the CPU
time of a 10,000-step chaos day on moto, 239 s to 162 s on the course machine):

- EventBridge renders each matched event for each target through an input
  template whose eight JSONPath expressions it parses again every time
  (``moto.events.utils.EventTemplateParser.parse`` imports
  ``jsonpath_ng.ext.parse`` when it runs), and jsonpath_ng's parser
  rebuilds its grammar tables on each parse: about a fifth of the day;
- every request lists the response class's methods with ``inspect``
  (``method_names_from_class``) to find its action;
- SQS converts each attribute name to a Python name
  (``camelcase_to_underscores``), a dozen names for each message received;
- for every request moto turns the botocore request into a werkzeug Request
  (``Request.from_primitives``), and werkzeug quotes its base URL and path
  (``iri_to_uri``) and, when moto reads the raw URL, unquotes its root URL
  (``uri_to_iri``): the same few URLs, request after request, each a
  string-to-string function of its one argument;
- DynamoDB lexes each ConditionExpression again, twice per conditional
  write (``ConditionExpressionParser._lex_condition_expression``); the
  tokens are immutable, so each parse gets a fresh deque of the first lexing's;
- it parses each UpdateExpression twice per UpdateItem
  (``UpdateExpressionParser.make``); moto only reads the tree (its validator
  works on a deep copy), so every call can share the first parse's;
- it parses each ConditionExpression twice per conditional write, with the
  same names and values (``ConditionExpressionParser.parse``); moto only
  evaluates the tree it builds, so the second parse hands out the first's
  and notes on its parser the names and values the first found;
- and it runs its grammar on the same expression and names again for every
  new set of values (a claim's ``:now``, an owner), though the grammar reads
  a value's name only: the node tree moto's grammar builds is kept per
  expression, names and value names, and each first parse puts its values
  into that tree and finishes with moto's own steps (the names and values
  found, the condition built); an expression moto refuses is parsed by moto.

Five detours computed the same answer the long way:

- moto reads the time as a timezone-aware datetime and subtracts the epoch
  (``unix_time``), for every message of a queue each time it looks at one;
  the clock's nanoseconds, cut to microseconds as ``datetime.now`` cuts
  them, give the same float;
- each of the ten passes of DynamoDB's update validator asks, at every node
  of the tree, which node types it processes (``DepthFirstTraverser.traverse``);
  the answer is the pass's own constant, so it asks once per pass;
- for each message it receives, SQS checks the retention period through
  ``get_queue_attributes``, which builds every attribute of the queue three
  times (each build counts the queue's messages three times); the queue's
  own ``message_retention_period`` is the value it reads.
- DynamoDB's update validator deep-copies the update's parsed tree before
  its passes change it (``validators.deepcopy``), walking the tree node by
  node in Python; the memoised tree is pickled once when it is parsed
  (``PICKLED_TREES``), and unpickling that gives the same tree, shared and
  cyclic references included, several times faster (anything else the
  validators copy is deep-copied as before).
- moto draws its random strings (a 52-character id for every request,
  ``MotoRandom.get_random_string``; a 185-letter receipt handle for every
  message SQS hands out, ``generate_receipt_handle``) a character at a time
  through ``random.Random.choice``, two Python calls a character; ``_drawn``
  draws each with ``getrandbits`` exactly as ``choice`` does, so a seeded
  moto gives the same strings and leaves its random in the same state (a
  random whose ``choice`` draws otherwise is left to moto's own code).

A cache keyed on the arguments hands back what the first call built (a
parsed path, a list of names, tokens, a tree: moto only reads them), and a shortcut
returns what the detour returns, so moto answers exactly as without them.
``install()`` puts them where moto looks the functions up and returns the
callable that takes them out again; the moto backends install them when
they open and remove them when they close.
"""

from __future__ import annotations

import collections
import functools
import importlib
import pickle
import random
import string
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

from fleetlab.core.errors import BackendUnavailable

INSTALLED = "_fleetlab_motocache"  # marks a replacement, so a second open backend leaves it be
PARSED_EXPRESSIONS = 1024  # distinct DynamoDB expressions kept lexed or parsed; the library uses a handful

MEMOISED = (  # (module, function, cache size): where moto looks each function up
    ("jsonpath_ng.ext", "parse", 256),  # distinct paths: the default template's 8, a transformer's few
    ("moto.core.responses", "method_names_from_class", 256),  # one entry per response class
    ("moto.core.responses", "camelcase_to_underscores", 1024),  # action names
    ("moto.sqs.models", "camelcase_to_underscores", 1024),  # queue attribute names
    ("werkzeug.test", "iri_to_uri", 1024),  # each request's base URL and path, as moto builds its Request
    ("werkzeug.sansio.utils", "uri_to_iri", 1024),  # each request's root URL, as moto reads its raw URL
)


def _unix_time(original: Callable[..., float]) -> Callable[..., float]:
    """``unix_time()`` read from the clock's nanoseconds (floored to microseconds, as datetime.now does)."""

    @functools.wraps(original)
    def unix_time(dt: Any = None) -> float:
        if dt is not None:
            return original(dt)
        seconds, micros = divmod(time.time_ns() // 1_000, 1_000_000)
        return seconds + micros / 1e6

    return unix_time


def _retention_check(original: Callable[..., bool]) -> Callable[..., bool]:
    """SQS's retention check reading the queue's retention period off the queue."""

    sqs_models = importlib.import_module("moto.sqs.models")

    @functools.wraps(original)
    def is_message_valid_based_on_retention_period(backend: Any, queue_name: str, message: Any) -> bool:
        retention_period = backend.get_queue(queue_name).message_retention_period
        return bool(retention_period + message.sent_timestamp / 1000 > sqs_models.unix_time())

    return is_message_valid_based_on_retention_period


def _remembered(found: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``found[key]``, made first if missing; ``found`` is emptied when it holds ``PARSED_EXPRESSIONS``.

    Safe on moto-server's threads: two may both make a missing value (the same one), and neither reads it back.
    """
    value = found.get(key)
    if value is None:
        if len(found) >= PARSED_EXPRESSIONS:
            found.clear()
        value = found[key] = make()
    return value


def _lexed_once(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The condition lexer memoised on the expression: a fresh deque of the first lexing's tokens."""
    lexed: dict[str, tuple[Any, ...]] = {}

    @functools.wraps(original)
    def lex(parser: Any) -> collections.deque[Any]:
        tokens = _remembered(lexed, parser.condition_expression, lambda: tuple(original(parser)))
        return collections.deque(tokens)

    return lex


def _condition_parsed_once(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The condition parser memoised on its expression, names and values: the first parse's tree (moto only
    evaluates it) and, on each parser, the names and values that parse found; no expression, no memo.

    New values for a known expression and names skip moto's grammar: its node tree (``_grammar``) is kept
    per expression, names and value placeholders, and each parse puts the values in and builds the condition
    from it with moto's own steps (``_from_grammar``)."""
    parsed: dict[tuple[str, str, str], tuple[Any, list[str], list[str]]] = {}
    grammars: dict[tuple[str, str, tuple[str, ...]], Any] = {}

    def parse_fresh(parser: Any) -> tuple[Any, list[str], list[str]]:
        fresh = type(parser)(parser.condition_expression, parser.expression_attribute_names,
                             parser.expression_attribute_values)
        values = fresh.expression_attribute_values
        if not isinstance(values, dict):
            return original(fresh), fresh.expr_attr_names_found, fresh.expr_attr_values_found
        try:
            grammar = _remembered(grammars, (fresh.condition_expression, repr(fresh.expression_attribute_names),
                                             tuple(values)), lambda: _grammar(original, fresh))
        except Exception:  # moto refuses the expression: let it say so, as it would
            return original(fresh), fresh.expr_attr_names_found, fresh.expr_attr_values_found
        return _from_grammar(fresh, grammar), fresh.expr_attr_names_found, fresh.expr_attr_values_found

    @functools.wraps(original)
    def parse(parser: Any) -> Any:
        if not parser.condition_expression:
            return original(parser)
        key = (parser.condition_expression, repr(parser.expression_attribute_names),
               repr(parser.expression_attribute_values))
        condition, names, values = _remembered(parsed, key, lambda: parse_fresh(parser))
        parser.expr_attr_names_found.extend(names)
        parser.expr_attr_values_found.extend(values)
        return condition

    return parse


def _grammar(original: Callable[[Any], Any], parser: Any) -> Any:
    """moto's node tree for ``parser``'s expression, each value node holding a placeholder (moto's grammar reads
    a value's name, never the value): moto's own parse, stopped before it builds the condition."""

    class Grammar(type(parser)):  # type: ignore[misc]
        def _lookup_expression_attribute_value(self, name: str) -> Any:
            return (self.expression_attribute_values[name], None)[1]  # moto's KeyError for an unknown name

        def _make_op_condition(self, node: Any) -> Any:
            return node

    return original(Grammar(parser.condition_expression, parser.expression_attribute_names,
                            parser.expression_attribute_values))


def _from_grammar(parser: Any, grammar: Any) -> Any:
    """The rest of moto's parse on ``grammar`` with ``parser``'s values put in: the names and values it finds,
    then the condition."""
    value_kind, values = parser.Kind.EXPRESSION_ATTRIBUTE_VALUE, parser.expression_attribute_values

    def filled(node: Any) -> Any:
        if node.kind == value_kind:
            return node._replace(value=values[node.text])
        return node._replace(children=[filled(child) for child in node.children]) if node.children else node

    node = filled(grammar)
    parser.expr_attr_names_found.extend(parser._find_literals(node))
    parser.expr_attr_values_found.extend(parser._find_expr_attr_values(node))
    return parser._make_op_condition(node)


def _parsed_once(original: Any) -> Any:
    """The update-expression parser (a classmethod) memoised on the expression: the first parse's tree, kept
    pickled too (``PICKLED_TREES``) for the validator's copies."""
    parse = original.__func__
    parsed: dict[tuple[type, str], Any] = {}

    def parse_and_pickle(parser: type, expression: str) -> Any:
        tree = parse(parser, expression)
        try:
            _remembered(PICKLED_TREES, id(tree), lambda: (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)))
        except Exception:  # noqa: BLE001 - a tree pickle refuses is copied by deepcopy, as moto does
            pass
        return tree

    @functools.wraps(parse)
    def make(parser: type, expression: str) -> Any:
        return _remembered(parsed, (parser, expression), lambda: parse_and_pickle(parser, expression))

    return classmethod(make)


PICKLED_TREES: dict[int, tuple[Any, bytes]] = {}  # id of a memoised update tree -> (the tree, its pickle)


def _copies_from_pickle(original: Callable[..., Any]) -> Callable[..., Any]:
    """The validators' ``deepcopy``: a memoised update tree is unpickled from its kept pickle (the same tree,
    shared and cyclic references included, as deepcopy builds); anything else is deep-copied."""

    @functools.wraps(original)
    def deepcopy(x: Any, memo: Any = None, _nil: Any = []) -> Any:  # noqa: B006 - copy.deepcopy's signature
        kept = PICKLED_TREES.get(id(x)) if memo is None else None
        if kept is not None and kept[0] is x:
            return pickle.loads(kept[1])
        return original(x, memo, _nil)

    return deepcopy


def _traverse_sorting_once(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A depth-first traversal that asks the traverser once, not at every node, which node types it processes."""
    node_class = importlib.import_module("moto.dynamodb.parsing.ast_nodes").Node

    @functools.wraps(original)
    def traverse(traverser: Any, root: Any) -> Any:
        processed = traverser.nodes_to_be_processed()

        def visit(node: Any, child_id: int) -> Any:  # moto's traverse_node_recursively, the tuple read once
            if isinstance(node, node_class):
                parent_node = node.parent
                if node.children is not None:
                    for i, child_node in enumerate(node.children):
                        traverser.pre_processing_of_child(node, i)
                        visit(child_node, i)
                if isinstance(node, processed):
                    node = traverser.process(node)
                    node.parent = parent_node
                    if parent_node:
                        parent_node.children[child_id] = node
            return node

        return visit(root, -1)

    return traverse


def _drawn(rng: Any, pool: str, length: int) -> str:
    """``"".join(rng.choice(pool) for _ in range(length))``, each character drawn with ``getrandbits`` exactly as
    ``random.Random.choice`` draws it (``_randbelow_with_getrandbits``), without its two calls per character."""
    n, getrandbits = len(pool), rng.getrandbits
    k = n.bit_length()
    drawn = []
    for _ in range(length):
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        drawn.append(pool[r])
    return "".join(drawn)


def _draws_as_random_does(rng: Any) -> bool:
    """True when ``rng.choice`` is ``random.Random``'s, drawing through ``_randbelow_with_getrandbits``."""
    kind = type(rng)
    return kind.choice is random.Random.choice and kind._randbelow is random.Random._randbelow_with_getrandbits


def _random_string_drawn(original: Callable[..., str]) -> Callable[..., str]:
    """moto's random string (its request ids: 52 characters a request) drawn by ``_drawn``."""

    @functools.wraps(original)
    def get_random_string(rng: Any, length: int = 20, include_digits: bool = True, lower_case: bool = False) -> str:
        if not _draws_as_random_does(rng):
            return original(rng, length, include_digits, lower_case)
        pool = string.ascii_letters + (string.digits if include_digits else "")
        drawn = _drawn(rng, pool, length)
        return drawn.lower() if lower_case else drawn

    return get_random_string


def _receipt_handle_drawn(original: Callable[[], str]) -> Callable[[], str]:
    """SQS's receipt handle (185 lowercase letters a message received) drawn from moto's random by ``_drawn``."""
    sqs_utils = importlib.import_module("moto.sqs.utils")

    @functools.wraps(original)
    def generate_receipt_handle() -> str:
        rng = sqs_utils.random  # moto's random, as the original reads it
        if not _draws_as_random_does(rng):
            return original()
        return _drawn(rng, string.ascii_lowercase, 185)

    return generate_receipt_handle


REPLACED = (  # (module, class in it or "" for the module itself, name, the replacement made from moto's own)
    ("moto.core.utils", "", "unix_time", _unix_time),  # also what unix_time_millis calls
    ("moto.sqs.models", "", "unix_time", _unix_time),
    ("moto.sqs.models", "SQSBackend", "is_message_valid_based_on_retention_period", _retention_check),
    ("moto.dynamodb.comparisons", "ConditionExpressionParser", "_lex_condition_expression", _lexed_once),
    ("moto.dynamodb.comparisons", "ConditionExpressionParser", "parse", _condition_parsed_once),
    ("moto.dynamodb.parsing.expressions", "UpdateExpressionParser", "make", _parsed_once),
    ("moto.dynamodb.parsing.validators", "", "deepcopy", _copies_from_pickle),  # its copy of the parsed tree
    ("moto.dynamodb.parsing.ast_nodes", "DepthFirstTraverser", "traverse", _traverse_sorting_once),
    ("moto.moto_api._internal.moto_random", "MotoRandom", "get_random_string", _random_string_drawn),
    ("moto.sqs.models", "", "generate_receipt_handle", _receipt_handle_drawn),
)


def install() -> Callable[[], None]:
    """Memoise each of ``MEMOISED`` and replace each of ``REPLACED`` until the returned callable is called;
    one already in place (a backend still open put it there) is left alone.

    Every function is looked up before any is touched: BackendUnavailable, naming the function and moto's
    version, when one is gone (a moto other than the pinned one), with nothing installed.
    """
    memoised = [(*_part(module_name, "", name), size) for module_name, name, size in MEMOISED]
    replaced = [(*_part(module_name, class_name, name), replacement)
                for module_name, class_name, name, replacement in REPLACED]
    undo: list[Callable[[], None]] = []
    for owner, name, original, size in memoised:
        if hasattr(original, "cache_info"):
            continue
        setattr(owner, name, functools.lru_cache(maxsize=size)(original))
        undo.append(functools.partial(setattr, owner, name, original))
    for owner, name, original, replacement in replaced:
        if getattr(original, INSTALLED, False):
            continue
        made = replacement(original)
        setattr(made, INSTALLED, True)
        setattr(owner, name, made)
        undo.append(functools.partial(setattr, owner, name, original))

    def uninstall() -> None:
        for restore in reversed(undo):
            restore()
        PICKLED_TREES.clear()

    return uninstall


def _part(module_name: str, class_name: str, name: str) -> tuple[Any, str, Any]:
    """(what holds it, its name, the function) for ``module_name[.class_name].name``; BackendUnavailable if gone."""
    try:
        module = importlib.import_module(module_name)
        owner = getattr(module, class_name) if class_name else module
        return owner, name, vars(owner)[name]
    except (ImportError, AttributeError, KeyError) as gone:
        where = ".".join(part for part in (module_name, class_name, name) if part)
        raise BackendUnavailable(
            f"moto {metadata.version('moto')} has no {where}, which fleetlab's moto shortcuts "
            f"(fleetlab.backends.motocache) replace; they were written for {_pinned_moto()}: "
            "install that version (make venv does), or update motocache for this one") from gone


def _pinned_moto() -> str:
    """The moto requirement fleetlab was installed with, or a description when fleetlab is not installed."""
    try:
        needs = metadata.requires("fleetlab") or []
    except metadata.PackageNotFoundError:
        needs = []
    return next((need for need in needs if need.startswith("moto")), "the moto that pyproject.toml pins")

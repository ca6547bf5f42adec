"""Memoise pure functions that in-process moto calls again and again (issue 30: the chaos day's cost).

Three computations moto repeats with the same arguments, each a pure
function of them; caching them takes about a third off the CPU time of a
10,000-step chaos day on moto (239 s to 162 s on the course machine):

- EventBridge renders each matched event for each target through an input
  template whose eight JSONPath expressions it parses again every time
  (``moto.events.utils.EventTemplateParser.parse`` imports
  ``jsonpath_ng.ext.parse`` when it runs), and jsonpath_ng's parser
  rebuilds its grammar tables on each parse: about a fifth of the day;
- every request lists the response class's methods with ``inspect``
  (``method_names_from_class``) to find its action;
- SQS converts each attribute name to a Python name
  (``camelcase_to_underscores``), a dozen names for each message received.

A cache keyed on the arguments hands back what the first call built (a
parsed path and a list of names, which moto only reads), so moto answers
exactly as without it. ``install()`` puts the caches where moto looks the
functions up and returns the callable that takes them out again; the moto
backends install them when they open and remove them when they close.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

MEMOISED = (  # (module, function, cache size): where moto looks each function up
    ("jsonpath_ng.ext", "parse", 256),  # distinct paths: the default template's 8, a transformer's few
    ("moto.core.responses", "method_names_from_class", 256),  # one entry per response class
    ("moto.core.responses", "camelcase_to_underscores", 1024),  # action names
    ("moto.sqs.models", "camelcase_to_underscores", 1024),  # queue attribute names
)


def install() -> Callable[[], None]:
    """Memoise each of ``MEMOISED`` until the returned callable is called; one already memoised is left alone."""
    undo: list[Callable[[], None]] = []
    for module_name, name, size in MEMOISED:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        if hasattr(original, "cache_info"):  # a backend still open memoised it
            continue
        setattr(module, name, functools.lru_cache(maxsize=size)(original))
        undo.append(functools.partial(setattr, module, name, original))

    def uninstall() -> None:
        for restore in reversed(undo):
            restore()

    return uninstall

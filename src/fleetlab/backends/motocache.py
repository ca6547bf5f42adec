"""Memoise pure computations that in-process moto repeats on every request (issue 30: the chaos day's cost).

moto's EventBridge renders each matched event for each target through an
input template whose eight JSONPath expressions it parses again every time
(``moto.events.utils.EventTemplateParser.parse``), and jsonpath_ng's parser
rebuilds its grammar tables on each parse: about a fifth of a chaos day's
run time on moto. The parse of a given path string always gives an equal,
read-only expression, so a cache keyed on the string answers the same.

``install()`` puts the cache where moto looks the parser up (it imports
``jsonpath_ng.ext.parse`` when it renders) and returns the callable that
takes it out again; the moto backends install it when they open and
remove it when they close. Whatever moto answers is unchanged: only the
repeated parse is saved.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

JSONPATH_CACHE_SIZE = 256  # distinct paths: moto's default template has 8, a rule's transformer a few more


def install() -> Callable[[], None]:
    """Memoise ``jsonpath_ng.ext.parse`` until the returned callable is called; idempotent while installed."""
    import jsonpath_ng.ext

    original = jsonpath_ng.ext.parse
    if hasattr(original, "cache_info"):  # already memoised (a backend still open installed it)
        return lambda: None
    jsonpath_ng.ext.parse = functools.lru_cache(maxsize=JSONPATH_CACHE_SIZE)(original)

    def uninstall() -> None:
        jsonpath_ng.ext.parse = original

    return uninstall


"""Hidden cases handed from the grader to its judge (``judge``), as one line of text.

The hidden cases live on the instructor's side, which the judge cannot
import. The grader encodes each check's hidden cases here (their class by
module and name, their fields by value) and the judge decodes them with the
learner's library alone: the case classes are the public side's. Only the
grader writes this text and only the judge reads it; no learner code runs
before the judge has decoded it.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading.registry import Case

__all__ = ["decode", "encode"]


def encode(cases_by_check: Mapping[str, Sequence[Case]]) -> str:
    """Each check's hidden cases as one line of ASCII text."""
    plain = {check_id: [_plain(case) for case in cases] for check_id, cases in cases_by_check.items()}
    return base64.b64encode(pickle.dumps(plain)).decode("ascii")


def decode(text: str) -> dict[str, tuple[Case, ...]]:
    """The cases ``encode`` wrote; InvalidInput when the text is not such a handover."""
    try:
        plain = pickle.loads(base64.b64decode(text.encode("ascii"), validate=True))
    except (ValueError, pickle.UnpicklingError, EOFError) as exc:
        raise InvalidInput("hidden", f"is not the grader's handover of hidden cases ({exc})") from None
    return {check_id: tuple(_case(*entry) for entry in cases) for check_id, cases in plain.items()}


def _plain(case: Case) -> tuple[str, str, dict[str, Any]]:
    kind = type(case)
    return kind.__module__, kind.__qualname__, {field.name: getattr(case, field.name) for field in dataclasses.fields(case)}


def _case(module: str, qualname: str, fields: dict[str, Any]) -> Case:
    kind: Any = importlib.import_module(module)
    for part in qualname.split("."):
        kind = getattr(kind, part)
    return kind(**fields)

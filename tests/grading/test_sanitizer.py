"""The committed nbval sanitizer masks what changes between runs, and nothing else."""

import re
from pathlib import Path

import pytest
from nbval.plugin import get_sanitize_patterns

CONFIG = Path(__file__).parents[1] / "nbval_sanitize.cfg"
PATTERNS = get_sanitize_patterns(CONFIG.read_text())


def sanitize(text):
    for regex, replace in PATTERNS:
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("run 3f2b1c4e-1d2a-4b5c-9d8e-0123456789ab", "run UUID"),
        ("at 2026-05-09T07:35:25.123456+00:00", "at TIMESTAMP"),
        ("at 2026-05-09 07:35:25Z", "at TIMESTAMP"),
        ("<object object at 0x7f12ab34cd56>", "<object object at 0xADDRESS>"),
        ("queue fl-00-3fa9c2-work", "queue fl-00-PREFIX-work"),
        ("took 0.42 s and 12.5 ms", "took DURATION and DURATION"),
    ],
)
def test_each_pattern_masks_what_varies(raw, clean):
    assert sanitize(raw) == clean


def test_fixed_numbers_stay_comparable():
    text = "a 900 s visibility timeout, 3 receives, maxReceiveCount=3, 43200 s cap"
    assert sanitize(text) == text

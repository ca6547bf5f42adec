"""Rich renderables (tables above all) as plain text and as notebook HTML.

Every table fleetlab shows is a ``rich`` table; these two functions are the
only places it becomes characters, so a terminal, an exception message and a
notebook output all show the same layout.
"""

from __future__ import annotations

import io

from rich.console import Console, RenderableType

WIDTH = 160  # wide enough that no table of the course wraps; rich shrinks nothing narrower
_PRE = ('<pre style="white-space:pre;overflow-x:auto;line-height:normal;'
        "font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace\">{code}</pre>")


def _console(*, record: bool = False) -> Console:
    return Console(file=io.StringIO(), width=WIDTH, record=record, color_system=None, force_terminal=False,
                   force_jupyter=False, soft_wrap=False, emoji=False, highlight=False)


def plain_text(renderable: RenderableType) -> str:
    """``renderable`` as uncoloured text, with no trailing spaces or newline."""
    console = _console()
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def notebook_html(renderable: RenderableType) -> str:
    """``renderable`` as a ``<pre>`` block with inline styles, as rich itself shows it in Jupyter."""
    console = _console(record=True)
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format=_PRE)

"""The fidelity table: per feature, what AWS documents next to what a backend did.

A ``FidelityTable`` looks its findings up, renders them (markdown for
``docs/fidelity.md``, rich for ``fleetlab doctor``) and round-trips through
JSON for the cache. ``to_text`` writes it where no table fits a line: one
block per feature, wrapped.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rich.table import Table

from fleetlab.core.errors import ConfigError


@dataclass(frozen=True)
class Finding:
    """One feature: AWS's documented behaviour next to what a backend did."""

    feature: str
    title: str
    aws: str
    observed: str
    matches_aws: bool
    workaround: str = ""


@dataclass(frozen=True)
class FidelityTable:
    """Every finding of one backend, in probe order, with the versions measured."""

    backend: str
    versions: dict[str, str]
    findings: tuple[Finding, ...]

    def get(self, feature: str) -> Finding:
        """The finding for ``feature``; ConfigError naming the known ids if there is none."""
        for finding in self.findings:
            if finding.feature == feature:
                return finding
        known = ", ".join(f.feature for f in self.findings)
        raise ConfigError(f"no fidelity finding {feature!r} for {self.backend}; known features: {known}")

    def diverges(self, feature: str) -> bool:
        """True when this backend does not behave as AWS documents ``feature``."""
        return not self.get(feature).matches_aws

    def divergences(self) -> tuple[Finding, ...]:
        """The findings where this backend differs from AWS."""
        return tuple(f for f in self.findings if not f.matches_aws)

    def to_markdown(self) -> str:
        """This table alone as markdown (feature | AWS | <backend>)."""
        return render_markdown({self.backend: self})

    def to_rich(self) -> Table:
        """A rich table for ``fleetlab doctor``: divergent rows in red."""
        table = Table(title=f"Fidelity of {self.backend} ({_versions_text(self)})", show_lines=True)
        for column in ("feature", "AWS", self.backend, "workaround"):
            table.add_column(column, overflow="fold")
        for f in self.findings:
            mark = "✓" if f.matches_aws else "✗"
            table.add_row(
                f"{f.title}\n[dim]{f.feature}[/dim]",
                f.aws,
                f"{mark} {f.observed}",
                f.workaround,
                style=None if f.matches_aws else "red",
            )
        return table

    def to_text(self, width: int = 100) -> str:
        """Plain text, one block per feature wrapped at ``width``: ``✗ <title> (<feature>)``, then AWS's
        behaviour, this backend's and the workaround of a divergence, each indented under it."""
        lines = [f"Fidelity of {self.backend} ({_versions_text(self)})"]
        for f in self.findings:
            lines += textwrap.wrap(f"{'✓' if f.matches_aws else '✗'} {f.title} ({f.feature})", width,
                                   subsequent_indent="  ")
            said = [("AWS", f.aws), (self.backend, f.observed)] + ([("workaround", f.workaround)] * (not f.matches_aws))
            for label, text in said:
                lines += textwrap.wrap(f"{label}: {text}", width, initial_indent="  ", subsequent_indent="    ")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``from_dict`` reads it back."""
        return {
            "backend": self.backend,
            "versions": dict(self.versions),
            "findings": [asdict(f) for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FidelityTable:
        """Rebuild a table from ``to_dict`` output; ConfigError names a malformed field."""
        backend = _field(data, "backend", str)
        versions = _field(data, "versions", dict)
        rows = _field(data, "findings", list)
        try:
            findings = tuple(Finding(**row) for row in rows)
        except TypeError as exc:
            raise ConfigError(f"fidelity table field 'findings' is malformed ({exc})") from exc
        return cls(backend=backend, versions={str(k): str(v) for k, v in versions.items()}, findings=findings)


def _field(data: Mapping[str, Any], name: str, kind: type) -> Any:
    value = data.get(name) if isinstance(data, Mapping) else None
    if not isinstance(value, kind):
        raise ConfigError(f"fidelity table field {name!r} must be a {kind.__name__}, got {value!r:.60}")
    return value


def render_markdown(columns: Mapping[str, FidelityTable | None]) -> str:
    """One markdown table, feature | AWS | one column per label; ``None`` reads "not probed".

    Below it: the versions measured and the workaround of each feature that
    diverges on any probed backend.
    """
    probed = {label: table for label, table in columns.items() if table is not None}
    if not probed:
        raise ConfigError("nothing to render: probe at least one backend")
    reference = next(iter(probed.values()))
    lines = [
        "| feature | AWS | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for finding in reference.findings:
        cells = [f"{finding.title}<br>`{finding.feature}`", finding.aws]
        cells += [_markdown_cell(table, finding.feature) for table in columns.values()]
        lines.append("| " + " | ".join(_escape(cell) for cell in cells) + " |")
    lines += ["", "✓ behaves as AWS documents. ✗ differs from AWS (workaround below).", ""]
    lines += [f"- {label}: {_versions_text(table)}" for label, table in probed.items()]
    lines += _workaround_lines(probed)
    return "\n".join(lines) + "\n"


def _versions_text(table: FidelityTable) -> str:
    return ", ".join(f"{package} {version}" for package, version in table.versions.items())


def _markdown_cell(table: FidelityTable | None, feature: str) -> str:
    if table is None:
        return "not probed"
    finding = table.get(feature)
    return ("✓ " if finding.matches_aws else "✗ ") + finding.observed


def _workaround_lines(probed: Mapping[str, FidelityTable]) -> list[str]:
    diverging: dict[str, tuple[Finding, list[str]]] = {}
    for label, table in probed.items():
        for finding in table.divergences():
            diverging.setdefault(finding.feature, (finding, []))[1].append(label)
    if not diverging:
        return []
    lines = ["", "## Workarounds", ""]
    for finding, labels in diverging.values():
        lines.append(f"- `{finding.feature}` ({', '.join(labels)}): {finding.workaround}")
    return lines


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")

"""Every table the course shows is drawn by rich: the same layout as text and as notebook HTML."""

from __future__ import annotations

from fleetlab.composition import cost
from fleetlab.course.grading.widget import progress_html
from fleetlab.display import Table


def test_a_table_lines_up_its_columns_and_right_aligns_numbers() -> None:
    table = Table([{"target": "results-store", "replays": 4}, {"target": "audit", "replays": 12}], title="replays")
    lines = str(table).splitlines()
    assert lines[0] == "replays"
    assert lines[1].split() == ["target", "replays"]
    assert set(lines[2]) == {"─"}
    assert lines[3].endswith(" 4") and lines[4].endswith("12")
    assert len(lines[3]) == len(lines[4])  # right-aligned: both rows end in the same column


def test_a_cell_is_shown_as_written_never_as_markup() -> None:
    table = Table([{"hop": "[bold]receive[/bold]", "after": 1.5}])
    assert "[bold]receive[/bold]" in str(table)
    assert "[bold]receive[/bold]" in table._repr_html_()


def test_a_missing_key_is_an_empty_cell_and_columns_keep_first_seen_order() -> None:
    table = Table([{"a": 1}, {"b": 2, "a": 3}])
    assert table.columns == ["a", "b"]
    assert str(table).splitlines()[-2].split() == ["1"]


def test_in_a_notebook_a_table_is_html_that_holds_the_same_text() -> None:
    table = Table([{"target": "audit-log", "took effect": 4}], title="what the replay delivered")
    html = table._repr_html_()
    assert html.startswith("<pre") and "what the replay delivered" in html and "audit-log" in html
    assert "font-weight: bold" in html  # the header, styled inline


def test_the_progress_widget_draws_its_checks_as_a_rich_table() -> None:
    from fleetlab.course.grading.progress import Row

    row = Row(id="00.planes", title="Name the three planes", status="pass", points=1.0, max_points=1.0, at="")
    html = progress_html([row])
    assert html.startswith("<pre") and "00.planes" in html and "Name the three planes" in html and "1/1" in html


def test_the_cost_estimate_is_a_table_with_its_total_under_it() -> None:
    prices = {"region": "us-east-1", "currency": "USD", "written": "2026-11-30", "free_tier": "none", "rules": []}
    found = cost.Estimate("demo", (cost.Line("sqs", "requests", 2_500_000, 1.0),), 3, (), "moto", prices)
    text = found.text()
    rows = [line.split() for line in text.splitlines()]
    assert ["service", "units", "unit", "price"] in rows
    assert ["sqs", "2,500,000", "requests", "$1.00"] in rows
    assert ["total", "about", "$1.00"] in rows

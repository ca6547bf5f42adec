import json

import pytest

from fleetlab.core.status import Status
from fleetlab.course.grading import display, registry
from fleetlab.course.grading.registry import Case, CaseOutcome, register
from fleetlab.course.grading.results import CaseResult, CheckResult, CheckStatus


def test_a_check_status_is_a_fleetlab_status_and_shows_as_the_same_string():
    assert issubclass(CheckStatus, Status)
    assert [str(status) for status in CheckStatus] == ["pass", "public pass", "fail", "not yet", "error", "skipped"]
    assert repr([CheckStatus.PUBLIC_PASS]) == "['public pass']"  # a notebook printing statuses reads the strings
    assert json.dumps({"status": CheckStatus.NOT_YET}) == '{"status": "not yet"}'  # as progress.json keeps it


SCORING = "3 points, 0.75 for each of 4 cases (3 here, 1 more at grading)"


def result(status=CheckStatus.FAIL,
           diagnosis="alert-7 filed 2 tickets: the redelivery at receive 2 ran the effect again"):
    cases = [
        CaseResult("redelivered", status, diagnosis),
        CaseResult("secret hidden case", CheckStatus.FAIL, "hidden input 12345", hidden=True),
    ]
    return CheckResult("99.dedupe", "File one ticket per alert", status, 0.75, 3, diagnosis, cases, 0, SCORING)


def in_notebook(status=CheckStatus.FAIL, diagnosis="alert-7 filed 2 tickets"):
    cases = [CaseResult("redelivered", CheckStatus.PASS), CaseResult("a failing ticket call", status, diagnosis)]
    return CheckResult("99.dedupe", "File one ticket per alert", status, None, 3, diagnosis, cases, 2, SCORING)


def test_text_names_the_check_status_points_and_diagnosis():
    text = display.as_text(result())
    assert text.splitlines()[0] == "✗ 99.dedupe File one ticket per alert: fail, 0.75/3 points"
    assert "alert-7 filed 2 tickets: the redelivery at receive 2 ran the effect again" in text
    assert "cases: ✗ redelivered" in text


def test_in_a_notebook_a_pass_says_what_it_covers_and_never_shows_points():
    text = display.as_text(in_notebook(CheckStatus.PUBLIC_PASS, "all 2 public cases pass"))
    first = text.splitlines()[0]
    assert first == "◐ 99.dedupe File one ticket per alert: public cases pass (the grader adds 2 more)"
    assert f"scoring: {SCORING}" in text
    assert "/3" not in text
    html = display.as_html(in_notebook(CheckStatus.PUBLIC_PASS, "all 2 public cases pass"))
    assert "public cases pass (the grader adds 2 more)" in html and "/3" not in html


def test_in_a_notebook_a_fail_counts_the_public_cases_that_pass():
    first = display.as_text(in_notebook()).splitlines()[0]
    assert first == "✗ 99.dedupe File one ticket per alert: fail (1 of 2 public cases pass)"


def test_hidden_cases_are_never_shown():
    bundle = display.mimebundle(result())
    for rendering in bundle.values():
        assert "secret hidden case" not in rendering and "12345" not in rendering


def test_html_escapes_what_the_learner_wrote():
    html = display.as_html(result(diagnosis="returned '<script>alert(1)</script>'"))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'data-status="fail"' in html


def test_points_are_written_plainly():
    assert [display.format_points(p) for p in (1, 2.0, 1.5)] == ["1", "2", "1.5"]
    assert "1/1 point" in display.as_text(CheckResult("00.planes", "t", CheckStatus.PASS, 1, 1, "all 4 cases pass"))


def test_points_read_as_people_write_them():
    shares = (2.0, 1.5, 0.125, 0.375, 2 / 6, 4 / 6, 3 / 7, round(2 / 6, 6))
    assert [display.readable_points(p) for p in shares] == ["2", "1.5", "0.125", "0.375", "0.33", "0.67", "0.43",
                                                            "0.33"]
    two_of_six = CheckResult("99.split", "t", CheckStatus.FAIL, round(2 * 2 / 6, 6), 2, "4 of 6 cases fail")
    assert display.as_text(two_of_six).splitlines()[0] == "✗ 99.split t: fail, 0.67/2 points"


def test_the_scoring_line_rounds_a_share_of_the_points():
    with registry.isolated():
        register("99.split", title="Split", points=2, public=[Case("a"), Case("b")],
                 hidden_cases=4)(lambda answer, case, ctx: CaseOutcome(True))
        check = registry.get_check("99.split")
    assert check.scoring() == "2 points, 0.33 for each of 6 cases (2 here, 4 more at grading)"


class FakeShell:
    """Just enough of IPython's shell: the execution count and the display formatter registry."""

    execution_count = 1

    def __init__(self):
        self.formatters = {}
        registry = self.formatters

        class Formatter:
            def for_type(self, kind, printer):
                registry[kind] = printer

        class DisplayFormatter:
            ipython_display_formatter = Formatter()

        self.display_formatter = DisplayFormatter()


@pytest.fixture
def shell(monkeypatch):
    shown = []
    fake = FakeShell()
    monkeypatch.setattr(display, "_ipython", lambda: fake)
    monkeypatch.setattr("IPython.display.display", lambda bundle, raw: shown.append(bundle))
    return fake, shown


def test_a_result_shows_once_per_cell_even_when_it_is_also_the_cells_value(shell):
    fake, shown = shell
    checked = result()
    display.show(checked)  # check() displays it
    fake.formatters[CheckResult](checked)  # IPython's display hook on the returned value
    assert len(shown) == 1
    fake.execution_count = 2
    fake.formatters[CheckResult](checked)  # evaluated again in a later cell: shown again
    assert len(shown) == 2
    assert set(shown[0]) == {"text/plain", "text/html"}


def test_outside_ipython_the_text_is_printed(monkeypatch, capsys):
    monkeypatch.setattr(display, "_ipython", lambda: None)
    display.show(result())
    assert capsys.readouterr().out.startswith("✗ 99.dedupe")

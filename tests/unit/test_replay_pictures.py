"""Lab 06's figures and its outage widget: titled, labelled, and the widget follows its slider."""

import matplotlib

matplotlib.use("Agg")

from fleetlab.display import outage_explorer, outage_posture, outage_table, window_timeline  # noqa: E402
from fleetlab.services.events.retry import BOUNDED, STANDARD_POSTURES, Posture  # noqa: E402
from fleetlab.services.state.window import DuplicateSources  # noqa: E402

DAY = 86_400


def labelled(figure):
    return [(a.get_title(), a.get_xlabel(), a.get_ylabel()) for a in figure.axes]


def test_the_window_timeline_marks_what_ran_again_and_the_last_possible_duplicate():
    sources = DuplicateSources(3_600, 4 * DAY, 7 * DAY)
    figure = window_timeline(sources, {"5 days": 5 * DAY, "safe": sources.safe_window()},
                             [("5 days", 7 * DAY, True), ("safe", 7 * DAY, False)])
    (title, xlabel, ylabel), = labelled(figure)
    assert title and xlabel and ylabel
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["the work can come back", "5 days", "safe"]
    assert axes.lines[0].get_xdata()[0] == sources.latest_duplicate / DAY


def test_the_outage_figure_draws_one_line_per_posture_in_each_panel():
    figure = outage_posture(STANDARD_POSTURES, 6 * 3_600, events_per_minute=10)
    assert figure._suptitle.get_text()
    assert all(title and xlabel and ylabel for title, xlabel, ylabel in labelled(figure))
    assert all(len(axes.get_lines()) == len(STANDARD_POSTURES) + 1 for axes in figure.axes)  # + the slider's line


def test_the_outage_table_says_who_is_paged_and_when():
    table = outage_table((Posture("bounded", BOUNDED), STANDARD_POSTURES[0]), 30 * 3_600, events_per_minute=10)
    bounded, silent = table.rows
    assert bounded["paged"] == "after 59 min 35 s"
    assert silent["paged"] == "never: events dropped silently" and silent["dropped"] > 0


def test_moving_the_outage_slider_redraws_the_table(capsys):
    widget = outage_explorer(STANDARD_POSTURES, start_minutes=60)  # outside a kernel the output prints
    slider, _ = widget.children
    assert "a 1 h target outage" in capsys.readouterr().out
    slider.value = 30 * 60
    assert "a 1 d 6 h target outage" in capsys.readouterr().out

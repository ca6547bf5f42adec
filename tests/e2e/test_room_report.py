"""The room report opened in real Chromium, as a facilitator puts it on the screen."""

from __future__ import annotations

from fleetlab_instructor.report.room import CheckInRoom, write_room_report

ROOM = [
    CheckInRoom("03.redrive", "Redrive without losing a step", 12, 7, (("deletes from the DLQ, then sends", 4),)),
    CheckInRoom("03.triage", "Triage the DLQ", 12, 11, ()),
]


def test_the_room_report_shows_its_plot_and_the_rooms_misconceptions(browser, tmp_path):
    path = tmp_path / "room.html"
    write_room_report(ROOM, path, title="workshop 12, lab 03")
    page = browser.new_page()
    try:
        page.goto(path.as_uri())
        assert page.title() == "workshop 12, lab 03"
        plot = page.locator("#room-plot")
        plot.wait_for(state="visible")
        assert plot.evaluate("img => img.complete && img.naturalWidth > 0 && img.naturalHeight > 0")
        assert page.get_by_role("heading", name="03.redrive Redrive without losing a step: 7 of 12 learners passed")\
            .is_visible()
        assert page.locator("ol.misconceptions li").first.inner_text() == "deletes from the DLQ, then sends (4)"
        assert "No misconception in the room." in page.inner_text("body")
    finally:
        page.close()

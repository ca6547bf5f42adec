"""JupyterLab in a real browser: run every cell of a notebook, then turn a widget knob.

Each test opens a notebook with ``?reset`` (no restored workspace), runs it through the
Run menu's "Run All Cells", waits (bounded) until every code cell shows an execution
count and the kernel is idle, checks that no output shows a traceback, and saves a
screenshot under ``artifacts/e2e/``. Targets: the fixture
``tests/e2e/fixtures/slider_demo.ipynb`` always, and ``labs/00_orientation.ipynb`` as
soon as it exists. Without Chromium, conftest.py skips these tests with the reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
LOAD_TIMEOUT_MS = 120_000
RUN_TIMEOUT_MS = 120_000
WIDGET_TIMEOUT_MS = 30_000
SLIDER_PRESSES = 3
MAX_SCREENSHOT_HEIGHT = 8_000
FIXTURE = "fixtures/slider_demo.ipynb"
KERNEL_IDLE = re.compile(r"^(?!No Kernel).+ \| Idle$")


def target_notebooks() -> dict[str, Path]:
    """Notebook path under the server root -> its file: the fixture, and lab 00 if present."""
    notebooks = {FIXTURE: REPO_ROOT / "tests/e2e" / FIXTURE}
    orientation = REPO_ROOT / "labs/00_orientation.ipynb"
    if orientation.exists():
        notebooks["labs/00_orientation.ipynb"] = orientation
    return notebooks


NOTEBOOKS = target_notebooks()

# JS: the texts of the outputs in the open notebook that show an error: an error
# output, or a stderr stream carrying a traceback (a warning on stderr is no error).
ERROR_TEXTS_JS = """
() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
  .filter(o => o.matches('[data-mime-type="application/vnd.jupyter.stderr"],'
                         + '[data-mime-type="application/vnd.jupyter.error"]'))
  .map(o => o.textContent)
  .filter(text => /Traceback|^\\w*(Error|Exception)\\b/m.test(text))
"""

# JS: true once Run All is over: an error showed (Run All stops there), or every
# non-empty code cell shows "[n]:" and the kernel indicator says idle.
RUN_FINISHED_JS = """
() => {
  if ((%s)().length > 0) return true;
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const numbered = [...panel.querySelectorAll('.jp-CodeCell')].every(cell => {
    const source = cell.querySelector('.jp-InputArea-editor').textContent.trim();
    return source === '' || /\\[\\d+\\]/.test(cell.querySelector('.jp-InputArea-prompt').textContent);
  });
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator').getAttribute('data-status');
  const kernel = document.querySelector('#jp-main-statusbar [title^="Change kernel"]')?.textContent ?? '';
  return numbered && indicator === 'idle' && / \\| Idle$/.test(kernel);
}
""" % ERROR_TEXTS_JS.strip()

# JS: what a widget output shows: its text and the sources of its images.
OUTPUT_SIGNATURE_JS = "el => el.textContent + '|' + [...el.querySelectorAll('img')].map(i => i.src).join('|')"


def code_cell_count(path: Path) -> int:
    """How many code cells the notebook file holds."""
    return sum(cell["cell_type"] == "code" for cell in json.loads(path.read_text())["cells"])


def kernel_status(page: Page) -> Locator:
    """The status bar's kernel item, e.g. "Python 3 (ipykernel) | Idle"."""
    return page.locator('#jp-main-statusbar [title^="Change kernel"]')


def open_notebook(page: Page, lab_server, notebook: str) -> Locator:
    """Open the notebook in a reset workspace; return its panel once its kernel is idle."""
    page.goto(lab_server.url(f"lab/tree/{notebook}?reset"), timeout=LOAD_TIMEOUT_MS)
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    expect(panel).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    expect(panel.locator(".jp-CodeCell")).to_have_count(code_cell_count(NOTEBOOKS[notebook]), timeout=LOAD_TIMEOUT_MS)
    # The toolbar's execution indicator says idle before any kernel exists: wait for
    # the status bar to name a kernel and report it idle.
    expect(kernel_status(page)).to_have_text(KERNEL_IDLE, timeout=LOAD_TIMEOUT_MS)
    return panel


def run_all_cells(page: Page) -> None:
    """Run > Run All Cells, through the menu bar."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()


def error_texts(page: Page) -> list[str]:
    """Texts of the outputs that show a traceback or an error."""
    return page.evaluate(ERROR_TEXTS_JS)


def unnumbered_prompts(panel: Locator) -> list[str]:
    """Non-empty code cells whose prompt shows no execution count."""
    missing = []
    for cell in panel.locator(".jp-CodeCell").all():
        source = cell.locator(".jp-InputArea-editor").text_content().strip()
        prompt = cell.locator(".jp-InputArea-prompt").text_content()
        if source and not any(ch.isdigit() for ch in prompt):
            missing.append(f"{prompt!r} before {source.splitlines()[0]!r}")
    return missing


def open_and_run(page: Page, lab_server, notebook: str, artifacts_dir: Path) -> Locator:
    """Open a notebook and run all cells; fail with the error text if a cell failed."""
    panel = open_notebook(page, lab_server, notebook)
    run_all_cells(page)
    try:
        page.wait_for_function(RUN_FINISHED_JS, timeout=RUN_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        page.screenshot(path=str(artifacts_dir / f"{Path(notebook).stem}-timeout.png"))
        pytest.fail(f"{notebook}: Run All not finished in {RUN_TIMEOUT_MS // 1000} s; "
                    f"prompts without a count: {unnumbered_prompts(panel)}; kernel: "
                    f"{kernel_status(page).text_content()!r}")
    errors = error_texts(page)
    assert not errors, f"{notebook}: {len(errors)} output(s) show an error:\n\n" + "\n\n".join(errors)
    missing = unnumbered_prompts(panel)
    assert not missing, f"{notebook}: cells that did not run: {missing}"
    return panel


def save_screenshot(page: Page, panel: Locator, path: Path) -> None:
    """Grow the window to the notebook's height (bounded), then take a full-page screenshot."""
    scroller = panel.locator(".jp-WindowedPanel-outer").first
    hidden = scroller.evaluate("el => el.scrollHeight - el.clientHeight")
    size = page.viewport_size
    height = min(size["height"] + hidden + 40, MAX_SCREENSHOT_HEIGHT)
    page.set_viewport_size({"width": size["width"], "height": height})
    page.wait_for_function(
        "([el, height]) => window.innerHeight === height && "
        "(el.scrollHeight <= el.clientHeight + 1 || height === %d)" % MAX_SCREENSHOT_HEIGHT,
        arg=[scroller.element_handle(), height],
        timeout=WIDGET_TIMEOUT_MS,
    )
    page.screenshot(path=str(path), full_page=True)


@pytest.fixture(params=sorted(NOTEBOOKS), ids=lambda notebook: Path(notebook).stem)
def notebook(request: pytest.FixtureRequest) -> str:
    """A target notebook's path under the server root."""
    return request.param


def setting_default(lab_server, plugin: str, key: str) -> object:
    """A setting's default as the server serves it: the schema's, after overrides.json."""
    served = lab_server.lab_api("GET", f"settings/{plugin}")
    assert key not in served["settings"], f"{plugin}: user settings set {key}"
    return served["schema"]["properties"][key]["default"]


def test_lab_settings_overrides_apply(lab_server) -> None:
    """The server reads the test's overrides.json: autosave and news are off."""
    assert setting_default(lab_server, "@jupyterlab/docmanager-extension:plugin", "autosave") is False
    notification = "@jupyterlab/apputils-extension:notification"
    assert setting_default(lab_server, notification, "fetchNews") == "false"
    assert setting_default(lab_server, notification, "checkForUpdates") is False


def test_run_all_cells_without_errors(page: Page, lab_server, notebook: str, artifacts_dir: Path) -> None:
    """Run All executes every code cell with no traceback and leaves the kernel idle."""
    panel = open_and_run(page, lab_server, notebook, artifacts_dir)
    expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle")
    save_screenshot(page, panel, artifacts_dir / f"{Path(notebook).stem}.png")


def slider_value(handle: Locator, attribute: str = "aria-valuenow") -> float:
    """A noUiSlider handle's value (or bound: aria-valuemin / aria-valuemax)."""
    return float(handle.get_attribute(attribute))


def press_and_wait(page: Page, handle: Locator, output: Locator) -> None:
    """Move the slider one step (right, or left at its maximum); wait for a changed
    value, a changed output and an idle kernel; fail on any error output."""
    value = slider_value(handle)
    key = "ArrowRight" if value < slider_value(handle, "aria-valuemax") else "ArrowLeft"
    before = output.evaluate(OUTPUT_SIGNATURE_JS)
    handle.press(key)
    page.wait_for_function(
        "([el, value]) => parseFloat(el.getAttribute('aria-valuenow')) !== value",
        arg=[handle.element_handle(), value],
        timeout=WIDGET_TIMEOUT_MS,
    )
    try:
        page.wait_for_function(
            f"([el, before]) => ({OUTPUT_SIGNATURE_JS})(el) !== before",
            arg=[output.element_handle(), before],
            timeout=WIDGET_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError:
        pytest.fail(f"{key}: the slider left {value} but its output stayed {before!r}")
    expect(kernel_status(page)).to_have_text(KERNEL_IDLE, timeout=WIDGET_TIMEOUT_MS)
    errors = error_texts(page)
    assert not errors, f"slider at {slider_value(handle)}: " + "\n\n".join(errors)


def test_slider_changes_its_output(page: Page, lab_server, notebook: str, artifacts_dir: Path) -> None:
    """Each arrow key on the first slider moves its value and changes the output in its cell."""
    panel = open_and_run(page, lab_server, notebook, artifacts_dir)
    cell = panel.locator(".jp-CodeCell").filter(has=page.locator(".widget-slider")).first
    handle = cell.locator(".widget-slider .noUi-handle").first
    output = cell.locator(".widget-output").first
    expect(handle).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    expect(output).not_to_be_empty(timeout=WIDGET_TIMEOUT_MS)

    handle.focus()
    for _ in range(SLIDER_PRESSES):
        press_and_wait(page, handle, output)

    if notebook == FIXTURE:  # 5 + 3 steps to the right, max 10
        expect(handle).to_have_attribute("aria-valuenow", re.compile(r"^8(\.0+)?$"))
        expect(output).to_have_text("n=8 square=64")
    save_screenshot(page, panel, artifacts_dir / f"{Path(notebook).stem}-slider.png")

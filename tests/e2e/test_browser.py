"""JupyterLab in a real browser: every lab runs top to bottom, and its main widget responds.

Targets: every student notebook in ``labs/`` (a new lab joins by being there) and the
fixture ``tests/e2e/fixtures/slider_demo.ipynb``. Each notebook is opened once, with
``?reset`` (no restored workspace), and run through the Run menu's "Run All Cells";
the test waits (bounded) until every code cell shows an execution count and the
kernel is idle, and fails on any output that shows a traceback. Then it moves the
control of the notebook's main widget, as the cell's metadata declares it
(``main_widget.py``, ``README.md``), and after each move waits for the watched part
to change, with no error. With ``FLEETLAB_SCREENSHOTS=<folder>`` it saves a small
picture of each lab's main widget there (``make screenshots``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from main_widget import DeclarationError, MainWidget, declared_main_widget
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
LOAD_TIMEOUT_MS = 120_000
RUN_TIMEOUT_MS = 240_000
RUN_POLL_MS = 250  # Run All is checked four times a second: on every frame, the check (every cell read) kept
# the browser busier than the notebook it watches
WIDGET_TIMEOUT_MS = 30_000
FIXTURE = "fixtures/slider_demo.ipynb"
KERNEL_IDLE = re.compile(r"^(?!No Kernel).+ \| Idle$")
SCREENSHOTS_ENV = "FLEETLAB_SCREENSHOTS"
PICTURE_WIDTH = 720  # pixels; README pictures stay a few tens of KiB
PICTURE_COLOURS = 64


def target_notebooks() -> dict[str, Path]:
    """Notebook path under the server root -> its file: the fixture, then every lab."""
    notebooks = {FIXTURE: REPO_ROOT / "tests/e2e" / FIXTURE}
    for path in sorted((REPO_ROOT / "labs").glob("*.ipynb")):
        notebooks[f"labs/{path.name}"] = path
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

# JS: what a widget part shows: its text and the sources of its images.
SIGNATURE_JS = "el => el.textContent + '|' + [...el.querySelectorAll('img')].map(i => i.src).join('|')"


@dataclass
class RanNotebook:
    """A notebook after Run All in its own page; ``problem`` says what went wrong, if anything."""

    name: str
    path: Path
    page: Page
    panel: Locator
    problem: str | None


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


def run_to_the_end(page: Page, panel: Locator, notebook: str, artifacts_dir: Path) -> str | None:
    """Run all cells; None when every cell ran with no error output, else what went wrong."""
    run_all_cells(page)
    try:
        page.wait_for_function(RUN_FINISHED_JS, timeout=RUN_TIMEOUT_MS, polling=RUN_POLL_MS)
    except PlaywrightTimeoutError:
        page.screenshot(path=str(artifacts_dir / f"{Path(notebook).stem}-timeout.png"))
        return (f"Run All not finished in {RUN_TIMEOUT_MS // 1000} s; prompts without a count: "
                f"{unnumbered_prompts(panel)}; kernel: {kernel_status(page).text_content()!r}")
    errors = error_texts(page)
    if errors:
        return f"{len(errors)} output(s) show an error:\n\n" + "\n\n".join(errors)
    missing = unnumbered_prompts(panel)
    return f"cells that did not run: {missing}" if missing else None


class NotebookRuns:
    """Each target notebook opened and run once, on first use, in its own page, kept until its last reader is done.

    Both tests of a notebook read the same run, whatever order they run in: a
    pytest-xdist worker tears a module's fixtures down between two of its tests,
    and a fixture of that scope would run every notebook twice. Once every test
    that reads a notebook has run, its page and its kernel are shut down, so no
    finished notebook's page keeps polling the server while the next one runs.
    """

    def __init__(self, browser, lab_server, artifacts_dir: Path) -> None:
        self.browser, self.lab_server, self.artifacts_dir = browser, lab_server, artifacts_dir
        self.runs: dict[str, RanNotebook] = {}
        self.contexts: dict[str, object] = {}
        self.reads: dict[str, int] = {}

    def run(self, notebook: str) -> RanNotebook:
        if notebook not in self.runs:
            context = self.browser.new_context(viewport={"width": 1280, "height": 900})
            self.contexts[notebook] = context
            page = context.new_page()
            panel = open_notebook(page, self.lab_server, notebook)
            problem = run_to_the_end(page, panel, notebook, self.artifacts_dir)
            self.runs[notebook] = RanNotebook(notebook, NOTEBOOKS[notebook], page, panel, problem)
        return self.runs[notebook]

    def read(self, notebook: str, readers: int) -> None:
        """One test of ``readers`` is done with ``notebook``'s run; after the last, close its page and kernel."""
        self.reads[notebook] = self.reads.get(notebook, 0) + 1
        if self.reads[notebook] == readers and notebook in self.contexts:
            self.contexts.pop(notebook).close()
            self.lab_server.delete_session(notebook)

    def close(self) -> None:
        for context in self.contexts.values():
            context.close()
        self.lab_server.delete_sessions()


@pytest.fixture(scope="session")
def notebook_runs(browser, lab_server, artifacts_dir: Path) -> Iterator[NotebookRuns]:
    """Every target notebook's one run; its pages and kernels are shut down at the end of the session."""
    runs = NotebookRuns(browser, lab_server, artifacts_dir)
    try:
        yield runs
    finally:
        runs.close()


@pytest.fixture(params=sorted(NOTEBOOKS), ids=lambda notebook: Path(notebook).stem)
def ran(request: pytest.FixtureRequest, notebook_runs: NotebookRuns) -> Iterator[RanNotebook]:
    """A target notebook after Run All (run once however many tests of this session read it)."""
    yield notebook_runs.run(request.param)
    notebook_runs.read(request.param, readers=readers_of(request.session, request.param))


def readers_of(session: pytest.Session, notebook: str) -> int:
    """How many collected tests read ``notebook``'s run."""
    return sum(1 for item in session.items
               if getattr(item, "callspec", None) is not None and item.callspec.params.get("ran") == notebook)


def test_lab_settings_overrides_apply(lab_server) -> None:
    """The server reads the test's overrides.json: autosave and news are off."""
    assert setting_default(lab_server, "@jupyterlab/docmanager-extension:plugin", "autosave") is False
    notification = "@jupyterlab/apputils-extension:notification"
    assert setting_default(lab_server, notification, "fetchNews") == "false"
    assert setting_default(lab_server, notification, "checkForUpdates") is False


def setting_default(lab_server, plugin: str, key: str) -> object:
    """A setting's default as the server serves it: the schema's, after overrides.json."""
    served = lab_server.lab_api("GET", f"settings/{plugin}")
    assert key not in served["settings"], f"{plugin}: user settings set {key}"
    return served["schema"]["properties"][key]["default"]


def test_runs_top_to_bottom(ran: RanNotebook) -> None:
    """Run All executes every code cell with no traceback and leaves the kernel idle."""
    if ran.problem is not None:
        pytest.fail(f"{ran.name}: {ran.problem}", pytrace=False)
    expect(ran.panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute("data-status", "idle")


def test_main_widget_responds(ran: RanNotebook, artifacts_dir: Path) -> None:
    """Each move of the declared control changes the watched part of the main widget, with no error."""
    if ran.problem is not None:
        pytest.fail(f"{ran.name} did not run top to bottom, so its widget cannot be tried: {ran.problem}")
    try:
        declared = declared_main_widget(ran.path)
    except DeclarationError as exc:
        pytest.fail(str(exc))
    cell = ran.panel.locator(".jp-CodeCell").nth(declared.cell_index)
    control = find_control(cell, declared)
    watched = cell.locator(declared.watch_selector).first
    expect(control).to_be_visible(timeout=WIDGET_TIMEOUT_MS)
    expect(watched).not_to_be_empty(timeout=WIDGET_TIMEOUT_MS)

    for move in range(1, declared.moves + 1):
        before = watched.evaluate(SIGNATURE_JS)
        how = MOVES[declared.control](ran.page, control)
        try:
            ran.page.wait_for_function(
                f"([el, before]) => ({SIGNATURE_JS})(el) !== before",
                arg=[watched.element_handle(), before],
                timeout=WIDGET_TIMEOUT_MS,
            )
        except PlaywrightTimeoutError:
            pytest.fail(f"{ran.name}: move {move} ({how}) left the {declared.watch} unchanged: {before[:300]!r}")
        expect(kernel_status(ran.page)).to_have_text(KERNEL_IDLE, timeout=WIDGET_TIMEOUT_MS)
        errors = error_texts(ran.page)
        assert not errors, f"{ran.name}: after move {move} ({how}): " + "\n\n".join(errors)
        if declared.expect:
            expect(watched).to_contain_text(re.compile(declared.expect, re.MULTILINE), timeout=WIDGET_TIMEOUT_MS)

    if ran.name == FIXTURE:  # the fixture's slider starts at 5 (max 10): three moves right
        expect(control).to_have_attribute("aria-valuenow", re.compile(r"^8(\.0+)?$"))
        expect(watched).to_have_text("n=8 square=64")
    save_picture(cell, ran.name, artifacts_dir)


def find_control(cell: Locator, declared: MainWidget) -> Locator:
    """The element to act on: inside the first widget of the declared kind (with the label, if given)."""
    widget_selector, target = declared.control_selectors
    widgets = cell.locator(widget_selector)
    if declared.label is not None:
        widgets = widgets.filter(has_text=declared.label)
    return widgets.first.locator(target).first


def move_slider(page: Page, handle: Locator) -> str:
    """One arrow key on a noUiSlider handle (right, or left at its maximum); waits for the new value."""
    value = float(handle.get_attribute("aria-valuenow"))
    key = "ArrowRight" if value < float(handle.get_attribute("aria-valuemax")) else "ArrowLeft"
    handle.focus()
    handle.press(key)
    page.wait_for_function(
        "([el, value]) => parseFloat(el.getAttribute('aria-valuenow')) !== value",
        arg=[handle.element_handle(), value],
        timeout=WIDGET_TIMEOUT_MS,
    )
    return f"{key} from {value:g}"


def move_dropdown(page: Page, select: Locator) -> str:
    """Choose the next option of a dropdown (the first after the last)."""
    options = select.locator("option").all_text_contents()
    index = select.evaluate("el => el.selectedIndex")
    chosen = (index + 1) % len(options)
    select.select_option(index=chosen)
    return f"option {options[chosen]!r}"


def click_button(page: Page, button: Locator) -> str:
    """Click a button."""
    button.click()
    return f"click on {button.text_content()!r}"


MOVES = {"slider": move_slider, "dropdown": move_dropdown, "button": click_button}


def save_picture(cell: Locator, notebook: str, artifacts_dir: Path) -> None:
    """A small PNG of the main widget's outputs: in artifacts/e2e/, and in $FLEETLAB_SCREENSHOTS for labs."""
    raw = artifacts_dir / f"{Path(notebook).stem}-widget.png"
    cell.locator(".jp-OutputArea-output").first.screenshot(path=str(raw))
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder and notebook.startswith("labs/"):
        shrink_png(raw, REPO_ROOT / folder / f"{Path(notebook).stem}.png")


def shrink_png(source: Path, target: Path) -> None:
    """``source`` cropped to its content, scaled to PICTURE_WIDTH pixels wide at most, with a
    small palette, into ``target``."""
    from PIL import Image, ImageChops

    with Image.open(source) as picture:
        picture = picture.convert("RGB")
        background = Image.new("RGB", picture.size, picture.getpixel((picture.width - 1, picture.height - 1)))
        content = ImageChops.difference(picture, background).getbbox()
        if content is not None:
            left, top, right, bottom = content
            picture = picture.crop((max(left - 8, 0), max(top - 8, 0),
                                    min(right + 8, picture.width), min(bottom + 8, picture.height)))
        if picture.width > PICTURE_WIDTH:
            height = round(picture.height * PICTURE_WIDTH / picture.width)
            picture = picture.resize((PICTURE_WIDTH, height), Image.Resampling.LANCZOS)
        target.parent.mkdir(parents=True, exist_ok=True)
        picture.quantize(colors=PICTURE_COLOURS).save(target, optimize=True)

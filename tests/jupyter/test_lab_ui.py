"""The JupyterLab extension in a real `jupyter lab`, driven by Playwright in Debian's Chromium.

One lab and one browser for the module (the extension built from this checkout and linked
into the lab's data dir, the server extension enabled by the shipped config file). Screenshots
go to test-artifacts/lab-*.png.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpulens.device.nvml import NvmlMonitor
from gpulens.device.recorded import RecordedBackend, load_snapshot
from gpulens.device.status import build_status
from gpulens.profiler.display import annotate
from gpulens.profiler.schema import SCHEMA

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "labextension" / "ui-tests"))
from lab_harness import (
    ARTIFACTS,
    CHROMIUM_FLAGS,
    REPO,
    Lab,
    ensure_chromium,
    ensure_lab_build,
    running_lab,
    write_notebook,
)

pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PROFILE = "gpulens:profile-cell"
MIME = "application/vnd.gpulens.profile+json"
PROFILER_FIXTURES = REPO / "tests" / "fixtures" / "profiler"

LOOP_CELL = """total = 0
for step in range(300):
    total += step * step
print("done", total)"""

RAISING_CELL = """partial = 0
for i in range(5):
    partial += i
raise ValueError("boom from the cell")"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    built = ensure_lab_build()
    with running_lab(
        Path(sys.executable), tmp_path_factory.mktemp("lab"), labextension=built
    ) as lab:
        yield lab


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = ensure_chromium()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"lab-{name}.png"))


def open_notebook(page: Any, lab: Lab, name: str) -> None:
    # a workspace of its own, so that no tab of an earlier test comes back
    page.goto(lab.page_url(f"lab/workspaces/{Path(name).stem}/tree/{name}"))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
    # the kernel is up and idle before anything runs
    page.wait_for_function(
        """() => {
          const panel = window.jupyterapp.shell.currentWidget;
          const kernel = panel && panel.sessionContext && panel.sessionContext.session
            && panel.sessionContext.session.kernel;
          return kernel && kernel.status === 'idle';
        }""",
        timeout=90_000,
    )


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(index)


def select_cell(page: Any, index: int) -> Any:
    target = cell(page, index)
    target.locator(".jp-InputPrompt").click()
    return target


def wait_for_run(target: Any) -> None:
    """Until the cell's prompt shows an execution count again."""
    target.locator(".jp-InputPrompt").filter(has_text=r"[*]").wait_for(state="detached")
    target.locator(".jp-InputPrompt").filter(has_text="[").filter(has_not_text="[ ]").wait_for()


def cost_of_line(target: Any, line: int) -> Any:
    return target.locator(f".gpulens-cost[data-line='{line}']")


def cell_payload(page: Any, index: int) -> dict[str, Any]:
    """The profile payload among the outputs of the notebook's cell `index`, once there (the
    kernel's output and its reply travel on two channels: either may come first)."""
    handle = page.wait_for_function(
        """([i, mime]) => {
          const outputs = window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs;
          for (let j = outputs.length - 1; j >= 0; j--) {
            const data = outputs.get(j).data[mime];
            if (data) return data;
          }
          return null;
        }""",
        arg=[index, MIME],
    )
    payload = handle.json_value()
    assert payload, f"cell {index} shows no profile payload"
    return payload


def assert_labels(target: Any, payload: dict[str, Any]) -> None:
    """Every line of the payload is drawn, reading its `label` word for word, and no other."""
    first = payload["source"]["first_line"]
    for line in payload["lines"]:
        number = line["line"] - first + 1
        assert cost_of_line(target, number).inner_text() == line["label"], number
    assert target.locator(".gpulens-cost").count() == len(payload["lines"])


def hover_fragments(markdown: str) -> list[str]:
    """What a reader sees of a hover's Markdown: each row's text without its markup
    (bullets, `**`, code-span backticks, escapes), each table cell on its own."""
    out = []
    for row in markdown.splitlines():
        if not row or set(row) <= set("|-: "):
            continue
        if row.startswith("|"):
            out += [cell.strip().strip("`") for cell in row.strip("|").split("|")]
        else:
            out.append(re.sub(r"\\(.)", r"\1", row.removeprefix("- ").replace("**", "")))
    return out


def assert_hover(page: Any, line: dict[str, Any]) -> None:
    """The hover shows the line's `hover` Markdown, rendered: every row's words are there."""
    hover = page.locator("body > .gpulens-cost-hover")
    hover.wait_for(state="visible")
    page.wait_for_function(
        "() => (document.querySelector('body > .gpulens-cost-hover') || {}).innerText",
    )
    text = hover.inner_text()
    for fragment in hover_fragments(line["hover"]):
        assert fragment in text, (fragment, text)
    assert "**" not in text and "\\" not in text  # Markdown, rendered


def cell_source(page: Any, index: int) -> str:
    return page.evaluate(
        "i => window.jupyterapp.shell.currentWidget.content.widgets[i].model.sharedModel"
        ".getSource()",
        index,
    )


# -- status -------------------------------------------------------------------------------------
def test_status_item_reads_cpu_only_and_explains_why(page: Any, lab: Lab) -> None:
    page.goto(lab.page_url())
    item = page.locator(".gpulens-status")
    item.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.gpulens-status').textContent === 'CPU only'",
        timeout=60_000,
    )
    assert "NVIDIA driver" in item.get_attribute("title")
    item.click()
    popup = page.locator(".gpulens-popup")
    popup.wait_for()
    assert "No NVIDIA driver found" in popup.inner_text()
    assert "Frameworks" in popup.inner_text()
    shot(page, "status")


def test_status_item_explains_a_missing_server_extension(page: Any, lab: Lab) -> None:
    page.route("**/gpulens/status*", lambda route: route.fulfill(status=404, body="Not Found"))
    page.goto(lab.page_url())
    page.wait_for_function(
        "() => (document.querySelector('.gpulens-status') || {}).textContent"
        " === 'GPU status: server extension missing'",
        timeout=30_000,
    )
    title = page.locator(".gpulens-status").get_attribute("title")
    assert "jupyter server extension enable gpulens.jupyter" in title


NVML = REPO / "tests" / "fixtures" / "nvml"


def recorded_status() -> dict[str, Any]:
    """The status payload of the two-H200 machine under load, as the server makes it from
    NVML answers and framework reports recorded there."""
    reading = NvmlMonitor(RecordedBackend(load_snapshot(NVML / "h200x2.json", "loaded"))).read()
    frameworks = json.loads((NVML / "doctor-h200x2.json").read_text())["status"]["frameworks"]
    return build_status(reading, frameworks, None, dt.datetime(2026, 11, 22, tzinfo=dt.UTC))


GPU_STATUS = recorded_status()


def test_status_item_draws_a_gpu_and_its_popup(page: Any, lab: Lab) -> None:
    """The server's answer on a GPU machine, replayed: the item, every GPU with its
    processes, the frameworks, the history; every word as the payload has it."""
    body = json.dumps(GPU_STATUS)
    shown = GPU_STATUS["display"]
    page.route(
        "**/gpulens/status*",
        lambda route: route.fulfill(status=200, body=body, content_type="application/json"),
    )
    page.goto(lab.page_url())
    item = page.locator(".gpulens-status")
    page.wait_for_function(
        "text => (document.querySelector('.gpulens-status') || {}).textContent === text",
        arg=shown["text"],
    )
    assert shown["text"] == "H200 · 99% · 2.5/140.4 GiB · 56°C (+1)"
    assert item.get_attribute("title") == shown["title"]
    page.wait_for_timeout(4500)  # a few samples for the sparklines
    item.click()
    popup = page.locator(".gpulens-popup")
    popup.wait_for()
    text = popup.inner_text()
    expected = [shown["heading"], shown["facts"], shown["frameworks"]["heading"]]
    expected += shown["frameworks"]["lines"]
    for gpu in shown["gpus"]:
        expected += [gpu["heading"], gpu["line"]]
        expected += [cell for row in gpu["processes"] for cell in row]
    for words in expected:
        assert words in text, words
    sections = popup.locator(".gpulens-gpu")
    assert sections.count() == len(shown["gpus"]) == 2
    assert sections.nth(1).locator(".gpulens-processes tr").count() == 1
    points = popup.locator(".gpulens-sparkline polyline").first.get_attribute("points")
    assert len(points.split()) >= 3
    shot(page, "status-gpu")


def test_status_polls_every_two_seconds_and_rests_while_hidden(page: Any, lab: Lab) -> None:
    calls: list[float] = []

    def answer(route: Any) -> None:
        calls.append(time.monotonic())
        route.fulfill(status=200, body=json.dumps(GPU_STATUS), content_type="application/json")

    page.route("**/gpulens/status*", answer)
    page.goto(lab.page_url())
    page.locator(".gpulens-status").filter(has_text="H200").wait_for()
    page.wait_for_timeout(6500)
    visible = len(calls)
    assert 3 <= visible <= 6, calls
    page.evaluate(
        """() => {
          Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
          Object.defineProperty(document, 'visibilityState',
            { configurable: true, get: () => 'hidden' });
          document.dispatchEvent(new Event('visibilitychange'));
        }"""
    )
    page.wait_for_timeout(500)
    before = len(calls)
    page.wait_for_timeout(6000)
    assert len(calls) == before, "polled while the tab was hidden"


# -- profile ------------------------------------------------------------------------------------
def test_profile_cell_draws_host_costs_beside_the_lines_that_ran(page: Any, lab: Lab) -> None:
    write_notebook(lab.root / "loop.ipynb", ["import math", LOOP_CELL])
    open_notebook(page, lab, "loop.ipynb")
    target = select_cell(page, 1)
    # the command is offered in the cell toolbar, the context menu and the palette
    button = target.locator(f".jp-cell-toolbar [data-command='{PROFILE}']")
    button.wait_for()
    button.click()
    wait_for_run(target)
    cost_of_line(target, 3).wait_for()
    shot(page, "profile")

    # the source is untouched: no %%gpulens line was added to the cell
    assert cell_source(page, 1) == LOOP_CELL
    # per-line costs of the host backend sit on the lines that ran, worded as the Python side
    # words them: hit counts and host time
    payload = cell_payload(page, 1)
    assert payload["backend"] == "host"
    assert_labels(target, payload)
    assert cost_of_line(target, 3).inner_text().startswith("300 hits · ")
    assert cost_of_line(target, 3).get_attribute("data-hits") == "300"
    line3 = target.locator(".cm-line").filter(has=page.locator(".gpulens-cost[data-line='3']"))
    assert "total += step * step" in line3.inner_text()
    # the output shows the cell's own print and the summary table, whose header names the
    # cell by its place in the notebook (the second), not by its execution count
    output = target.locator(".jp-OutputArea").inner_text()
    assert "done" in output
    assert payload["display"]["header"].startswith("gpulens profile · cell 2 (lines 2–5) · ")
    assert payload["display"]["header"] in output
    assert "host backend" in output
    # one execution count, as a normal run gives
    assert target.locator(".jp-InputPrompt").inner_text().strip() == "[1]:"

    cost_of_line(target, 3).hover()
    loop_line = next(line for line in payload["lines"] if line["line"] == 4)
    assert_hover(page, loop_line)
    assert "ran 300 times" in page.locator("body > .gpulens-cost-hover").inner_text()
    shot(page, "hover")

    # editing the cell clears its costs
    target.locator(".cm-content .cm-line").nth(0).click()
    page.keyboard.press("End")
    page.keyboard.type("  # edited")
    cost_of_line(target, 3).wait_for(state="detached")
    assert target.locator(".gpulens-cost").count() == 0


def test_profile_from_the_context_menu_and_shortcut_and_palette(page: Any, lab: Lab) -> None:
    write_notebook(lab.root / "entry.ipynb", ["a = [i for i in range(10)]\nb = sum(a)", "c = 1"])
    open_notebook(page, lab, "entry.ipynb")
    first = select_cell(page, 0)
    first.locator(".jp-InputArea-editor").click(button="right")
    page.locator(".lm-Menu-item").filter(has_text="Profile cell on GPU").click()
    wait_for_run(first)
    shot(page, "context-menu")
    assert_labels(first, cell_payload(page, 0))
    assert cost_of_line(first, 2).inner_text().startswith("1 hit · ")

    second = select_cell(page, 1)
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+Shift+P")
    wait_for_run(second)
    cost_of_line(second, 1).wait_for()

    page.keyboard.press("Control+Shift+C")
    page.keyboard.type("Profile cell on GPU")
    palette_item = page.locator(".lm-CommandPalette-item").filter(has_text="Profile cell on GPU")
    palette_item.first.wait_for()
    page.keyboard.press("Escape")


def test_raising_cell_shows_its_traceback_and_costs_and_the_kernel_lives_on(
    page: Any, lab: Lab
) -> None:
    write_notebook(lab.root / "raise.ipynb", [RAISING_CELL, "print('still alive', partial)"])
    open_notebook(page, lab, "raise.ipynb")
    target = select_cell(page, 0)
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+Shift+P")
    wait_for_run(target)
    error = target.locator("[data-mime-type='application/vnd.jupyter.stderr']")
    error.wait_for()
    assert "ValueError" in error.inner_text()
    assert "boom from the cell" in error.inner_text()
    # the lines that ran are annotated, including the one that raised
    payload = cell_payload(page, 0)
    assert_labels(target, payload)
    assert {line["line"] for line in payload["lines"]} >= {4, 5}
    assert cost_of_line(target, 3).inner_text().startswith("5 hits · ")
    assert "gpulens profile" in target.locator(".jp-OutputArea").inner_text()
    shot(page, "error")

    after = select_cell(page, 1)
    page.keyboard.press("Shift+Enter")
    after.locator(".jp-OutputArea").filter(has_text="still alive 10").wait_for()


# -- a GPU payload, drawn --------------------------------------------------------------------
def gpu_payload() -> tuple[dict[str, Any], str]:
    """A cupti-backend notebook payload recorded on the device machine
    (tests/fixtures/profiler/*.profile.json), with its words as the Python side writes them."""
    recorded = sorted(PROFILER_FIXTURES.glob("*.profile.json"))
    assert recorded, "no notebook payload recorded in tests/fixtures/profiler"
    payload = annotate(json.loads(recorded[0].read_text()))
    assert payload["backend"] in ("cupti", "torch")
    return payload, "\n".join(payload["code"])


def test_a_saved_gpu_profile_is_drawn_with_kernels_and_syncs(page: Any, lab: Lab) -> None:
    payload, source = gpu_payload()
    first = payload["source"]["first_line"]
    output = {
        "output_type": "display_data",
        "metadata": {},
        "data": {MIME: payload, "text/plain": "gpulens profile"},
    }
    write_notebook(
        lab.root / "gpu.ipynb",
        [{"cell_type": "code", "source": source, "outputs": [output], "execution_count": 1}],
    )
    open_notebook(page, lab, "gpu.ipynb")
    target = cell(page, 0)
    busiest = max(payload["lines"], key=lambda line: line["kernels"]["count"])
    line = busiest["line"] - first + 1
    cost = cost_of_line(target, line)
    cost.wait_for()
    # every line's label is the Python side's wording ("1.4k kernels · 8.4 ms GPU · …")
    assert_labels(target, payload)
    assert cost.inner_text() == busiest["label"]
    assert " kernels · " in cost.inner_text()
    code_line = payload["code"][busiest["line"] - first]
    drawn_on = target.locator(".cm-line").filter(
        has=page.locator(f".gpulens-cost[data-line='{line}']")
    )
    assert code_line.strip() in drawn_on.inner_text()
    synced = [entry for entry in payload["lines"] if entry["syncs"]["count"]]
    assert synced
    for entry in synced:
        assert "⏸" in cost_of_line(target, entry["line"] - first + 1).inner_text()
    cost.hover()
    assert_hover(page, busiest)
    hover = page.locator("body > .gpulens-cost-hover")
    top = busiest["kernels"]["top"][0]["name"]
    assert top[:40] in hover.inner_text()
    # the top kernels are a table, their names code spans
    assert hover.locator("table tbody tr").count() == len(busiest["kernels"]["top"])
    assert hover.locator("td code").first.inner_text().removesuffix("…") in top
    shot(page, "gpu-payload")


def test_fixture_payloads_are_notebook_payloads() -> None:
    """A payload recorded for the drawing test must be what the magic displays, read as
    today's payload (one recorded before `/2` named a notebook cell by its run count)."""
    for path in sorted(PROFILER_FIXTURES.glob("*.profile.json")) + sorted(
        PROFILER_FIXTURES.glob("*.profile.json.gz")
    ):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            payload = annotate(json.load(handle))
        assert payload["schema"] == SCHEMA, path
        assert payload["source"]["first_line"] == 2, path
        assert payload["source"]["path"] is None and payload["source"]["execution_count"], path

"""Quick-fixes and refactors in notebook cells, in a real `jupyter lab` driven by Playwright in
Debian's Chromium: without jupyterlab-lsp (the extension draws the findings itself), and with
it (jupyterlab-lsp draws gpulens' diagnostics, the extension adds the fixes it lacks).

Each expected text is what the Python side makes of the same cells (`analyze_cells` and the
fix's edits, `fix_all_cells`, the refactor), computed here; the page's cell text must equal it,
and one undo must restore the cell. Screenshots go to test-artifacts/lab-fix-*.png.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpulens.analysis import analyze_cells
from gpulens.analysis.edits import apply_edits
from gpulens.analysis.notebook_fixes import fix_all_cells
from gpulens.analysis.refactors import refactor
from gpulens.jupyter.notebook_actions import CellText
from gpulens.profiler.display import annotate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "labextension" / "ui-tests"))
from lab_harness import (
    ARTIFACTS,
    CHROMIUM_FLAGS,
    Lab,
    cell_sources,
    editor_selection,
    ensure_chromium,
    ensure_jupyterlab_lsp,
    ensure_lab_build,
    notebook_cell,
    open_notebook,
    running_lab,
    write_notebook,
)

pytest.importorskip("jupyterlab")
sync_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PROFILES = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"

SETUP_CELL = 'import torch\nx = torch.randn(10, device="cuda")\n'
LOOP_CELL = (
    "total = 0.0  # 🔥\nfor i in range(100):\n    total += (x * i).sum().item()\nprint(total)\n"
)
OTHER_LOOP = "steps = 0.0\nfor j in range(10):\n    steps += x.sum().item()"
MOVE_CELL = "import torch\nw = torch.randn(64, 64)\nlayer = torch.nn.Linear(64, 8)\nprint(w.sum())"


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
    page.screenshot(path=str(ARTIFACTS / f"lab-fix-{name}.png"))


def line_of(target: Any, number: int) -> Any:
    """The editor line `number` (1-based) of a cell locator."""
    return target.locator(".cm-content .cm-line").nth(number - 1)


def menu_item(page: Any, label: str) -> Any:
    """A menu entry shown now (a hidden command's entry stays in the menu, hidden)."""
    return page.locator(".lm-Menu-item:not(.lm-mod-hidden)").filter(has_text=label)


def undo_in(page: Any, target: Any) -> None:
    """Ctrl-Z in the cell's editor, once."""
    line_of(target, 1).click()
    page.keyboard.press("Control+z")


def test_a_finding_is_marked_and_its_quick_fix_applies_from_the_context_menu(
    page: Any, lab: Lab
) -> None:
    cells = [SETUP_CELL, LOOP_CELL]
    write_notebook(lab.root / "quickfix.ipynb", cells)
    open_notebook(page, lab, "quickfix.ipynb")
    (finding,) = [f for f in analyze_cells(cells)[1].findings if f.code == "GPU001"]
    fix = finding.fixes[0]
    target = notebook_cell(page, 1)
    # without jupyterlab-lsp the extension marks the finding, worded by the Python side
    mark = target.locator(".gpulens-finding")
    mark.wait_for()
    assert mark.inner_text() in LOOP_CELL.split("\n")[finding.span.line]
    mark.hover()
    hover = page.locator(".gpulens-finding-hover")
    hover.wait_for()
    assert finding.message in hover.inner_text()
    assert target.locator(f".gpulens-bulb[data-line='{finding.span.line + 1}']").count() == 1
    shot(page, "marked")

    line_of(target, finding.span.line + 1).click(button="right")
    item = menu_item(page, f"gpulens: {fix.title}")
    item.wait_for()
    assert menu_item(page, "gpulens: Fix all in notebook").count() == 1
    # no selection: the selection refactors are not offered
    assert menu_item(page, "gpulens: Move to device").count() == 0
    shot(page, "context-menu")
    item.click()
    fixed = apply_edits(LOOP_CELL, fix.edits)
    page.wait_for_function(
        "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
        ".model.sharedModel.getSource() === text",
        arg=fixed,
    )
    assert cell_sources(page) == [SETUP_CELL, fixed]
    # typing right after the fix is an undo step of its own: the first Ctrl-Z takes back the
    # typing, the second the whole fix
    line_of(target, 1).click()
    page.keyboard.press("End")
    page.keyboard.type("  # typed")
    typed = fixed.replace("\n", "  # typed\n", 1)
    assert cell_sources(page)[1] == typed
    page.keyboard.press("Control+z")
    page.wait_for_function(
        "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
        ".model.sharedModel.getSource() === text",
        arg=fixed,
    )
    # the finding is gone once the fixed text is analysed
    page.wait_for_timeout(1500)
    assert target.locator(".gpulens-finding").count() == 0
    line_of(target, 1).click()
    page.keyboard.press("Control+z")
    page.wait_for_function(
        "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
        ".model.sharedModel.getSource() === text",
        arg=LOOP_CELL,
    )
    assert cell_sources(page) == cells
    target.locator(".gpulens-finding").wait_for()


def test_fix_all_in_notebook_from_the_bulb_is_one_undo_per_cell(page: Any, lab: Lab) -> None:
    cells = [SETUP_CELL, LOOP_CELL, OTHER_LOOP]
    write_notebook(lab.root / "fixall.ipynb", cells)
    open_notebook(page, lab, "fixall.ipynb")
    expected = fix_all_cells(cells)
    assert expected[1] != LOOP_CELL and expected[2] != OTHER_LOOP
    bulb = notebook_cell(page, 2).locator(".gpulens-bulb")
    bulb.wait_for()
    bulb.click()
    menu = page.locator(".gpulens-fix-menu")
    menu.wait_for()
    shot(page, "bulb-menu")
    menu.locator(".lm-Menu-item").filter(has_text="gpulens: Fix all in notebook").click()
    page.wait_for_function(
        "texts => window.jupyterapp.shell.currentWidget.content.widgets"
        ".every((cell, i) => cell.model.sharedModel.getSource() === texts[i])",
        arg=expected,
    )
    assert cell_sources(page) == expected
    # one step undoes the last cell's fix, and leaves the other cell's alone
    undo_in(page, notebook_cell(page, 2))
    page.wait_for_function(
        "text => window.jupyterapp.shell.currentWidget.content.widgets[2]"
        ".model.sharedModel.getSource() === text",
        arg=OTHER_LOOP,
    )
    assert cell_sources(page) == [SETUP_CELL, expected[1], OTHER_LOOP]


def test_move_to_device_on_a_selection_asks_the_device_and_undoes_in_one_step(
    page: Any, lab: Lab
) -> None:
    cells = [LOOP_CELL, MOVE_CELL]
    write_notebook(lab.root / "move.ipynb", cells)
    open_notebook(page, lab, "move.ipynb")
    target = notebook_cell(page, 1)
    # select lines 2 and 3 with the keyboard
    line_of(target, 2).click()
    page.keyboard.press("Home")
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Shift+End")
    start, end = editor_selection(page, 1)
    assert start < end
    line_of(target, 2).click(button="right")
    item = menu_item(page, "gpulens: Move to device…")
    item.wait_for()
    assert menu_item(page, "gpulens: Insert synchronize-aware timer").count() == 1
    shot(page, "refactor-menu")
    item.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    field = dialog.locator("input")
    assert field.input_value() == "cuda"
    field.fill("cuda:1")
    shot(page, "device-dialog")
    dialog.locator(".jp-mod-accept").click()

    span = CellText(MOVE_CELL).span(start, end)
    moved = refactor("move_to_device", MOVE_CELL, span, "cuda:1")
    assert moved is not None
    expected = apply_edits(MOVE_CELL, moved.edits)
    assert '"cuda:1"' in expected
    page.wait_for_function(
        "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
        ".model.sharedModel.getSource() === text",
        arg=expected,
    )
    assert cell_sources(page) == [LOOP_CELL, expected]
    shot(page, "moved")

    undo_in(page, target)
    page.wait_for_function(
        "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
        ".model.sharedModel.getSource() === text",
        arg=MOVE_CELL,
    )
    assert cell_sources(page) == cells


@pytest.fixture(scope="module")
def lab_with_lsp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    built = ensure_lab_build()
    home = tmp_path_factory.mktemp("lab-lsp")
    with running_lab(
        Path(sys.executable), home, labextension=built, data_paths=(ensure_jupyterlab_lsp(),)
    ) as lab:
        yield lab


def test_with_jupyterlab_lsp_its_diagnostics_show_and_the_fix_still_applies(
    browser: Any, lab_with_lsp: Lab
) -> None:
    lab = lab_with_lsp
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        cells = [SETUP_CELL, LOOP_CELL]
        write_notebook(lab.root / "with-lsp.ipynb", cells)
        open_notebook(page, lab, "with-lsp.ipynb")
        assert page.evaluate(
            "() => window.jupyterapp.hasPlugin('@jupyter-lsp/jupyterlab-lsp:diagnostics')"
        )
        (finding,) = [f for f in analyze_cells(cells)[1].findings if f.code == "GPU001"]
        fix = finding.fixes[0]
        target = notebook_cell(page, 1)
        # jupyterlab-lsp draws the language server's diagnostic; no second underline of ours
        target.locator(".cm-lintRange-warning").first.wait_for()
        bulb = target.locator(f".gpulens-bulb[data-line='{finding.span.line + 1}']")
        bulb.wait_for()
        assert target.locator(".gpulens-finding").count() == 0
        shot(page, "with-jupyterlab-lsp")
        line_of(target, finding.span.line + 1).click(button="right")
        menu_item(page, f"gpulens: {fix.title}").click()
        fixed = apply_edits(LOOP_CELL, fix.edits)
        page.wait_for_function(
            "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
            ".model.sharedModel.getSource() === text",
            arg=fixed,
        )
        assert cell_sources(page) == [SETUP_CELL, fixed]
        undo_in(page, target)
        page.wait_for_function(
            "text => window.jupyterapp.shell.currentWidget.content.widgets[1]"
            ".model.sharedModel.getSource() === text",
            arg=LOOP_CELL,
        )
    finally:
        context.close()


def test_a_cell_s_saved_profile_confirms_its_finding_and_an_edit_clears_it(
    page: Any, lab: Lab
) -> None:
    # the example notebook's training loop under `%%gpulens` on an H200, worded as the magic
    # words its output today
    profile = annotate(json.loads((PROFILES / "pitfalls_cell3_h200.profile.json").read_text()))
    loop = "\n".join(profile["code"])
    setup = (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(784, 10).to('cuda')\n"
        "x = torch.randn(256, 784, device='cuda')\n"
        "y = torch.randint(0, 10, (256,), device='cuda')\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    )
    # the loop cell as saved after `%%gpulens` ran it on an H200: its profile is its output
    profiled = {
        "cell_type": "code",
        "source": loop,
        "execution_count": 3,
        "outputs": [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"application/vnd.gpulens.profile+json": profile, "text/plain": "…"},
            }
        ],
    }
    write_notebook(lab.root / "measured.ipynb", [setup, profiled])
    open_notebook(page, lab, "measured.ipynb")
    target = notebook_cell(page, 1)
    mark = target.locator(".gpulens-finding")
    mark.wait_for()
    mark.hover()
    hover = page.locator(".gpulens-finding-hover")
    hover.wait_for()
    assert "Measured in the last profile: 200 syncs, 1.5 ms stalled" in hover.inner_text()
    shot(page, "measured")

    # an edit of the measured line drops its figures; the finding stays
    sync = loop.split("\n").index("    losses.append(loss.item())") + 1
    line_of(target, sync).click()
    page.keyboard.press("End")
    page.keyboard.type("  # edited")
    page.wait_for_timeout(1500)
    mark = target.locator(".gpulens-finding")
    mark.wait_for()
    page.mouse.move(0, 0)
    mark.hover()
    hover = page.locator(".gpulens-finding-hover")
    hover.wait_for()
    assert "GPU001" in hover.inner_text() and "Measured" not in hover.inner_text()

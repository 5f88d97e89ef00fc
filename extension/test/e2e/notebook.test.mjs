// Notebooks in the packaged extension without the Jupyter extension: code-server's built-in
// `ipynb` serializer opens the .ipynb as a notebook; the language server's notebook sync
// (LSP 3.17) analyses the code cells as one program, so a GPU tensor made in one cell is flagged
// where another cell loops over it; a quick-fix applied in that cell edits only that cell, as
// `analyze_cells` computes it; a saved `%%gpulens` output is drawn by the extension's renderer.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { log, PYTHON, REPO_ROOT, screenshot, setup, startVSCode } from './harness.mjs';

const CELLS = join(REPO_ROOT, 'extension', 'test-fixtures', 'workspace', 'cells.ipynb');
const PROFILE = join(
  REPO_ROOT,
  'tests',
  'fixtures',
  'profiler',
  'pitfalls_cell3_h200.profile.json',
);
const PROFILE_MIME = 'application/vnd.gpulens.profile+json';
const SETTINGS = {
  'gpulens.python': PYTHON,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'editor.minimap.enabled': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'window.commandCenter': false,
  'chat.commandCenter.enabled': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'files.autoSave': 'off',
  'security.workspace.trust.enabled': false,
};

/** A notebook's cell sources, as the .ipynb on disk holds them. */
function cellSources(file) {
  const notebook = JSON.parse(readFileSync(file, 'utf8'));
  return notebook.cells.map((c) => ({ kind: c.cell_type, source: [].concat(c.source).join('') }));
}

/** Runs Python (the repository's venv) with `input` as JSON on stdin; returns its JSON answer. */
function python(script, input) {
  return JSON.parse(
    execFileSync(PYTHON, ['-c', script], { input: JSON.stringify(input), encoding: 'utf8' }),
  );
}

/** The first GPU001 finding of the code cells as `analyze_cells` reports it, and its fixed text. */
function expectedFix(codeCells) {
  return python(
    `
import json, sys
from gpulens.analysis import analyze_cells
from gpulens.analysis.edits import apply_edits
cells = json.load(sys.stdin)
for index, analysis in enumerate(analyze_cells(cells)):
    for f in analysis.findings:
        if f.code == "GPU001" and f.fixes:
            fix = f.fixes[0]
            print(json.dumps({"cell": index, "line": f.span.line, "column": f.span.column,
                              "title": fix.title, "fixed": apply_edits(cells[index], fix.edits)}))
            sys.exit(0)
print("null")
`,
    codeCells,
  );
}

/** A profile recorded on an H200, with its words as the Python side writes them today. */
function annotated(payload) {
  return python(
    `
import json, sys
from gpulens.profiler.display import annotate
print(json.dumps(annotate(json.load(sys.stdin))))
`,
    payload,
  );
}

/** A notebook whose second cell ran `%%gpulens` and was saved with its output. */
function profiledNotebook(payload) {
  const lines = ['%%gpulens', ...payload.code];
  const source = lines.map((l, i) => (i < lines.length - 1 ? `${l}\n` : l));
  const notebook = {
    cells: [
      {
        cell_type: 'markdown',
        id: 'about',
        metadata: {},
        source: ['A cell profiled on an H200, saved with its output'],
      },
      {
        cell_type: 'code',
        execution_count: 3,
        id: 'profiled',
        metadata: {},
        outputs: [
          {
            output_type: 'display_data',
            metadata: {},
            data: { [PROFILE_MIME]: payload, 'text/plain': ['<gpulens profile>'] },
          },
        ],
        source,
      },
    ],
    metadata: {
      kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
      language_info: { name: 'python' },
    },
    nbformat: 4,
    nbformat_minor: 5,
  };
  const file = join(mkdtempSync(join(tmpdir(), 'gpulens-e2e-nb-')), 'profiled.ipynb');
  writeFileSync(file, JSON.stringify(notebook, null, 1));
  return file;
}

/** Opens a notebook through Quick Open and waits for its code cells' editors. */
async function openNotebook(page, name, codeCells) {
  await page
    .locator('.monaco-workbench')
    .click({ position: { x: 700, y: 300 } })
    .catch(() => {});
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor();
  await page.keyboard.press('Enter');
  await page.locator(`.tab.active[aria-label*="${name}"]`).first().waitFor();
  const editors = page.locator(
    '.notebook-editor .code-cell-row .cell-editor-container .monaco-editor',
  );
  await editors.nth(codeCells - 1).waitFor();
  return editors;
}

let entry;
before(() => {
  entry = setup();
});

describe('notebook without the Jupyter extension', () => {
  let vscode;
  const payload = annotated(JSON.parse(readFileSync(PROFILE, 'utf8')));
  before(async () => {
    vscode = await startVSCode(entry, {
      name: 'notebook',
      settings: SETTINGS,
      files: { 'cells.ipynb': CELLS, 'profiled.ipynb': profiledNotebook(payload) },
    });
  });
  after(async () => {
    await vscode?.close();
  });

  it('opens the .ipynb as a notebook with the built-in serializer; no Jupyter extension', async () => {
    const { page } = vscode;
    const editors = await openNotebook(page, 'cells.ipynb', 2);
    assert.equal(await editors.count(), 2, 'two code cells, each with its editor');
    assert.equal(await page.locator('.notebook-editor .markdown-cell-row').count(), 1);
    // the profile's extensions: gpulens alone (code-server's built-ins live elsewhere)
    const installed = readdirSync(join(vscode.folder, '..', 'extensions')).filter(
      (n) => !n.endsWith('.json') && !n.startsWith('.'),
    );
    log(`installed extensions: ${JSON.stringify(installed)}`);
    assert.ok(
      installed.length > 0 && installed.every((n) => n.startsWith('gpulens.')),
      `installed: ${installed}`,
    );
  });

  it('flags GPU001 in the cell that loops over the tensor another cell made', async () => {
    const { page } = vscode;
    const sources = cellSources(CELLS);
    const code = sources.filter((c) => c.kind === 'code').map((c) => c.source);
    const expected = expectedFix(code);
    assert.ok(expected, 'analyze_cells reports a GPU001 with a fix');
    assert.equal(expected.cell, 1, 'in the second code cell');
    // alone, the loop's cell has no finding: the one shown comes from the cells analysed together
    assert.equal(expectedFix([code[1]]), null);

    await page.keyboard.press('Control+Shift+M');
    const row = page.locator('.markers-panel .monaco-list-row', { hasText: 'GPU001' }).first();
    await row.waitFor({ timeout: 45_000 });
    log('notebook problems: GPU001');
    // squiggles drawn in each code cell's editor, by cell
    const squiggles = async () =>
      page.evaluate(() =>
        [...document.querySelectorAll('.notebook-editor .code-cell-row')].map(
          (cell) =>
            cell.querySelectorAll(
              '.cell-editor-container .squiggly-warning, .cell-editor-container .squiggly-error',
            ).length,
        ),
      );
    let drawn = await squiggles();
    for (let i = 0; i < 50 && !(drawn[1] > 0); i += 1) {
      await page.waitForTimeout(200);
      drawn = await squiggles();
    }
    log(`squiggles per code cell: ${JSON.stringify(drawn)}`);
    assert.equal(drawn.length, 2);
    assert.equal(drawn[0], 0, 'nothing in the cell that makes the tensor');
    assert.ok(drawn[1] > 0, 'the loop cell is marked');
    // the Problems panel names the loop's cell (VS Code labels a cell's markers by its notebook)
    const resources = await page.locator('.markers-panel .monaco-list-row').allTextContents();
    log(`problems rows: ${JSON.stringify(resources)}`);
    assert.ok(
      resources.some((r) => r.includes('cells.ipynb')),
      'the markers belong to the notebook',
    );
    // at the cell-relative position analyze_cells gives (1-based in the panel)
    const text = (await row.textContent()) ?? '';
    assert.ok(
      text.includes(`[Ln ${expected.line + 1}, Col ${expected.column + 1}]`),
      `GPU001 row: ${text}`,
    );
    await screenshot(page, 'notebook-diagnostics');
  });

  it('applies the GPU001 quick-fix inside the cell: that cell changes as analyze_cells says, no other', async () => {
    const { page, folder } = vscode;
    const file = join(folder, 'cells.ipynb');
    const before = cellSources(file);
    const code = before.filter((c) => c.kind === 'code').map((c) => c.source);
    const expected = expectedFix(code);
    assert.notEqual(expected.fixed, code[1]);

    const row = page.locator('.markers-panel .monaco-list-row', { hasText: 'GPU001' }).first();
    await row.click(); // reveals the finding in its cell, the cursor on it
    await page.waitForTimeout(500);
    const cellEditor = page
      .locator('.notebook-editor .code-cell-row')
      .nth(1)
      .locator('.monaco-editor textarea');
    // the cursor must be in the loop's cell: focus its editor if the panel kept the focus
    if (!(await cellEditor.evaluate((el) => el === document.activeElement)))
      await cellEditor.focus();
    await page.keyboard.press('Control+.');
    const action = page
      .locator('.action-widget .monaco-list-row', { hasText: expected.title })
      .first();
    await action.waitFor();
    await screenshot(page, 'notebook-quickfix');
    // the fix is the focused entry of the menu
    const focused =
      (await page.locator('.action-widget .monaco-list-row.focused').textContent()) ?? '';
    assert.ok(focused.includes(expected.title), `focused action: ${focused}`);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(500);
    await page.keyboard.press('Control+S');
    let after = before;
    for (let i = 0; i < 50 && JSON.stringify(after) === JSON.stringify(before); i += 1) {
      await page.waitForTimeout(200);
      after = cellSources(file);
    }
    log(`cells after the fix: ${JSON.stringify(after.map((c) => c.source))}`);
    assert.equal(after.length, before.length);
    assert.deepEqual(after[0], before[0], 'the markdown cell is untouched');
    assert.deepEqual(after[1], before[1], 'the cell that makes the tensor is untouched');
    assert.equal(after[2].source, expected.fixed);
    log('notebook quick-fix applied');
  });

  it('draws a saved %%gpulens output with its renderer: the per-line table', async () => {
    const { page } = vscode;
    const table = payload.display.table;
    await page.keyboard.press('Control+J'); // hide the panel: room for the output
    await openNotebook(page, 'profiled.ipynb', 1);
    // the output lives in the notebook's webview (an iframe inside an iframe)
    let rows = null;
    for (let i = 0; i < 100 && !rows; i += 1) {
      for (const frame of page.frames()) {
        rows = await frame
          .evaluate(() => {
            const table = document.querySelector('.gpulens-profile table');
            if (!table) return null;
            return {
              summary: document.querySelector('.gpulens-profile .summary')?.textContent ?? '',
              head: [...table.querySelectorAll('thead th')].map((th) => th.textContent),
              body: [...table.querySelectorAll('tbody tr')].map((tr) =>
                [...tr.cells].map((td) => td.textContent),
              ),
            };
          })
          .catch(() => null);
        if (rows) break;
      }
      if (!rows) await page.waitForTimeout(300);
    }
    assert.ok(rows, 'the gpulens renderer drew a table in the output');
    log(`renderer: ${rows.summary}; ${rows.body.length} rows`);
    assert.equal(rows.summary, payload.display.header);
    // the table as Python laid it out: its columns, and one row per line of the cell after
    // `%%gpulens` (line 2 on), every cell as Python wrote it
    assert.deepEqual(
      rows.head,
      table.columns.map((c) => c.title),
    );
    assert.deepEqual(
      rows.body,
      table.rows.map((r) => r.cells),
    );
    assert.equal(rows.body.length, payload.code.length);
    assert.deepEqual(
      rows.body.map((r) => r.at(-1)),
      payload.code,
    );
    // the kernel counts by line, as the payload holds them: 1.4k on the forward, 2.4k on backward
    const gpu = table.columns.findIndex((c) => c.title === 'GPU work');
    const kernels = Object.fromEntries(
      rows.body.map((r) => [r[0], /(\S+) kernels?/.exec(r[gpu])?.[1] ?? null]),
    );
    assert.deepEqual(Object.fromEntries(Object.entries(kernels).filter(([, k]) => k)), {
      5: '1.4k',
      7: '2.4k',
      8: '200',
    });
    await screenshot(page, 'notebook-renderer');
  });
});

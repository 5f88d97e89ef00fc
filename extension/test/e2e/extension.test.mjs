// The packaged extension in a real VS Code (code-server) on this machine (no GPU): the status
// bar says CPU only as soon as the folder opens (before any file is), GPU001 shows and its quick-fix edits the file as the server says, a `# %%`
// cell's code lens profiles it with the host backend and draws per-line costs; in an untrusted
// folder, findings still show and profiling says why it is off.

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  applyEdits,
  cliFindings,
  editorTexts,
  fixFile,
  log,
  openFile,
  PYTHON,
  REPO_ROOT,
  screenshot,
  setup,
  startVSCode,
} from './harness.mjs';

const PITFALLS = join(REPO_ROOT, 'examples', 'train_pitfalls.py');
const CELLS = join(REPO_ROOT, 'extension', 'test-fixtures', 'workspace', 'cells.py');
const BASE_SETTINGS = {
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
};

let entry;
before(() => {
  entry = setup();
});

/** Opens the Problems panel and waits for a row that mentions `code`. */
async function problem(page, code) {
  await page.keyboard.press('Control+Shift+M');
  const row = page.locator('.markers-panel .monaco-list-row', { hasText: code }).first();
  await row.waitFor({ timeout: 45_000 });
  return row;
}

describe('trusted folder', () => {
  let vscode;
  before(async () => {
    vscode = await startVSCode(entry, {
      name: 'trusted',
      settings: { ...BASE_SETTINGS, 'security.workspace.trust.enabled': false },
      files: { 'train_pitfalls.py': PITFALLS, 'cells.py': CELLS },
    });
  });
  after(async () => {
    await vscode?.close();
  });

  it('shows "CPU only" in the status bar as soon as a Python project opens, before any file', async () => {
    const { page } = vscode;
    const item = page.locator('.statusbar-item', { hasText: 'CPU only' });
    await item.waitFor({ timeout: 45_000 });
    log('status bar: CPU only');
    // no editor was opened: the extension started on the folder's Python files
    assert.equal(await page.locator('.editor-instance .monaco-editor').count(), 0);
    const label = (await item.getAttribute('aria-label')) ?? '';
    assert.match(label, /CPU only/);
  });

  it('shows GPU001 and applies its quick-fix as the server computes it', async () => {
    const { page, folder } = vscode;
    const file = join(folder, 'train_pitfalls.py');
    const before = readFileSync(file, 'utf8');
    const finding = cliFindings(file).find((f) => f.code === 'GPU001');
    assert.ok(finding, 'the CLI reports GPU001 in train_pitfalls.py');
    const fix = finding.fixes[0];
    const expected = applyEdits(before, fix.edits);
    assert.notEqual(expected, before);

    await openFile(page, 'train_pitfalls.py');
    const row = await problem(page, 'GPU001');
    log('problems: GPU001');
    await screenshot(page, 'diagnostics');
    await row.click(); // puts the cursor on the finding
    await page.waitForTimeout(300);
    // the editor moved to the finding's line; ask for its quick-fixes there
    await page.locator('.editor-instance .monaco-editor textarea').first().focus();
    await page.keyboard.press('Control+.');
    const action = page.locator('.action-widget .monaco-list-row', { hasText: fix.title }).first();
    await action.waitFor();
    await screenshot(page, 'quickfix');
    // the fix is the first, focused entry of the menu
    const focused =
      (await page.locator('.action-widget .monaco-list-row.focused').textContent()) ?? '';
    assert.ok(focused.includes(fix.title), `focused action: ${focused}`);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(500);
    await page.keyboard.press('Control+S');
    let after = before;
    for (let i = 0; i < 50 && after === before; i += 1) {
      await page.waitForTimeout(200);
      after = readFileSync(file, 'utf8');
    }
    assert.equal(after, expected);
    log('quick-fix applied');
  });

  it('profiles a # %% cell from its code lens and draws per-line costs', async () => {
    const { page } = vscode;
    await openFile(page, 'cells.py');
    const lenses = page.locator('.contentWidgets .codelens-decoration a', {
      hasText: 'Profile cell',
    });
    await lenses.nth(1).waitFor({ timeout: 45_000 });
    assert.equal(await lenses.count(), 2);
    await lenses.nth(1).click(); // cell 2
    let costs = [];
    for (let i = 0; i < 100 && costs.length === 0; i += 1) {
      await page.waitForTimeout(300);
      costs = (await editorTexts(page)).filter((t) =>
        /^\s*60k hits · \d+(\.\d)? ms host\s*$/.test(t),
      );
    }
    log(`per-line costs: ${JSON.stringify(costs)}`);
    await screenshot(page, 'profile-drawn');
    assert.equal(costs.length, 2, 'the two lines of the loop carry their costs');
    // the tint: a decoration with a translucent orange background over the hot lines
    const tinted = await page.evaluate(
      () =>
        [...document.querySelectorAll('.editor-instance .view-overlays div')].filter((el) =>
          /rgba\(255, 90, 31/.test(getComputedStyle(el).backgroundColor),
        ).length,
    );
    assert.ok(tinted >= 2, `tinted lines: ${tinted}`);
    await page.keyboard.press('Control+J'); // hide the panel for the picture
    await page.waitForTimeout(500);
    await screenshot(page, 'profile');
  });
});

describe('trusted folder, server crash', () => {
  // its own VS Code, so a crash cannot disturb the checks above
  let vscode;
  before(async () => {
    vscode = await startVSCode(entry, {
      name: 'crash',
      settings: { ...BASE_SETTINGS, 'security.workspace.trust.enabled': false },
      files: { 'train_pitfalls.py': PITFALLS },
    });
  });
  after(async () => {
    await vscode?.close();
  });

  it('shows a crashed server and restarts it; findings come back', async () => {
    const { page } = vscode;
    await openFile(page, 'train_pitfalls.py');
    await page.locator('.statusbar-item', { hasText: 'CPU only' }).waitFor({ timeout: 45_000 });
    const [pid, ...more] = vscode.processes('-m gpulens serve');
    assert.ok(pid && more.length === 0, `one language server runs: ${[pid, ...more]}`);
    process.kill(pid, 'SIGKILL');
    const toast = page.locator('.notifications-toasts .notification-toast', {
      hasText: 'gpulens language server stopped',
    });
    await toast.waitFor();
    log('crash shown');
    await page.locator('.statusbar-item', { hasText: 'CPU only' }).waitFor({ timeout: 30_000 });
    let restarted = [];
    for (let i = 0; i < 50 && restarted.length === 0; i += 1) {
      await page.waitForTimeout(200);
      restarted = vscode.processes('-m gpulens serve');
    }
    assert.equal(restarted.length, 1);
    assert.notEqual(restarted[0], pid);
    await problem(page, 'GPU001');
    log('server restarted');
  });
});

describe('untrusted folder', () => {
  let vscode;
  before(async () => {
    vscode = await startVSCode(entry, {
      name: 'untrusted',
      settings: {
        ...BASE_SETTINGS,
        'security.workspace.trust.enabled': true,
        'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.emptyWindow': false,
        '[python]': { 'editor.codeActionsOnSave': { 'source.fixAll.gpulens': 'explicit' } },
      },
      files: { 'train_pitfalls.py': PITFALLS, 'cells.py': CELLS },
    });
  });
  after(async () => {
    await vscode?.close();
  });

  it('still shows findings', async () => {
    const { page } = vscode;
    await openFile(page, 'train_pitfalls.py');
    await problem(page, 'GPU001');
    log('untrusted: GPU001 shown');
  });

  it('fixes all on save with source.fixAll.gpulens, as `gpulens check --fix` does', async () => {
    const { page, folder } = vscode;
    const file = join(folder, 'train_pitfalls.py');
    const original = readFileSync(file, 'utf8');
    const fixedCopy = join(folder, '..', 'fixed-by-cli.py');
    writeFileSync(fixedCopy, original);
    fixFile(fixedCopy);
    const codes = (path) =>
      cliFindings(path)
        .map((f) => f.code)
        .sort();
    const expected = codes(fixedCopy);
    assert.ok(codes(file).length > expected.length, 'the CLI fixes some findings');

    await openFile(page, 'train_pitfalls.py');
    await page.locator('.editor-instance .monaco-editor textarea').first().focus();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter'); // an edit, so the save is a real one
    await page.keyboard.press('Control+S');
    let saved = original;
    for (let i = 0; i < 50 && saved === original; i += 1) {
      await page.waitForTimeout(200);
      saved = readFileSync(file, 'utf8');
    }
    assert.notEqual(saved, original);
    assert.deepEqual(codes(file), expected);
    assert.ok(!saved.includes('loss.item()'), 'GPU001 was fixed on save');
    log(`fix-all on save left ${JSON.stringify(expected)}`);
  });

  it('does not profile, and says why', async () => {
    const { page } = vscode;
    await openFile(page, 'cells.py');
    const lens = page
      .locator('.contentWidgets .codelens-decoration a', { hasText: 'Profile cell' })
      .nth(1);
    await lens.waitFor({ timeout: 45_000 });
    await lens.click();
    const toast = page.locator('.notifications-toasts .notification-toast', {
      hasText: 'profiling is off in an untrusted workspace',
    });
    await toast.waitFor();
    await screenshot(page, 'untrusted');
    await page.waitForTimeout(1000);
    const costs = (await editorTexts(page)).filter((t) => /hits? · .* host/.test(t));
    assert.deepEqual(costs, []);
  });
});

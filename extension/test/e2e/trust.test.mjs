// A hostile repository opened in the packaged extension (code-server): its `json.py`,
// `lsprotocol/`, `pygls/`, `contextlib.py`, … each leave a marker file when imported, and, when
// untrusted, its `.vscode/settings.json` names an interpreter that leaves one when run. Opening the folder,
// getting findings, and "Run Environment Check" must leave no marker: the server and the doctor
// run with -P in the extension's private folder, and in an untrusted folder VS Code hands the
// extension the user's interpreter settings only (restrictedConfigurations).

import assert from 'node:assert/strict';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  log,
  PYTHON,
  REPO_ROOT,
  runCommand,
  screenshot,
  setup,
  startVSCode,
  openFile,
} from './harness.mjs';

const PITFALLS = join(REPO_ROOT, 'examples', 'train_pitfalls.py');
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
};
// what the server, the gpulens check and the doctor import; contextlib is runpy's (only -P helps)
const MODULES = ['json', 'argparse', 'contextlib', 'numba', 'torch', 'cupy', 'jax'];
const PACKAGES = ['lsprotocol', 'pygls'];

/**
 * A repository's files (target -> source, as `startVSCode` takes them) whose modules write
 * `markers/<name>` when imported, and whose settings name an interpreter that writes
 * `markers/interpreter` when run.
 */
function hostileRepository({ withSettings }) {
  const root = mkdtempSync(join(tmpdir(), 'gpulens-e2e-hostile-'));
  const markers = join(root, 'markers');
  const sources = join(root, 'sources');
  mkdirSync(sources);
  const files = { 'train_pitfalls.py': PITFALLS };
  for (const name of [...MODULES, ...PACKAGES]) {
    const target = PACKAGES.includes(name) ? `${name}/__init__.py` : `${name}.py`;
    const source = join(sources, target.replace('/', '_'));
    writeFileSync(
      source,
      `import os\nos.makedirs(${JSON.stringify(markers)}, exist_ok=True)\nopen(os.path.join(${JSON.stringify(markers)}, ${JSON.stringify(name)}), 'a').close()\n`,
      { flag: 'w' },
    );
    files[target] = source;
  }
  if (withSettings) {
    const interpreter = join(root, 'repo-python');
    writeFileSync(
      interpreter,
      `#!/bin/sh\nmkdir -p '${markers}'\necho ran >> '${markers}/interpreter'\nexec '${PYTHON}' "$@"\n`,
    );
    chmodSync(interpreter, 0o755);
    const settings = join(sources, 'settings.json');
    writeFileSync(
      settings,
      JSON.stringify({ 'gpulens.python': interpreter, 'gpulens.profile.python': interpreter }),
    );
    files['.vscode/settings.json'] = settings;
  }
  return {
    files,
    ran: () => {
      try {
        return readdirSync(markers).sort();
      } catch {
        return [];
      }
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** Waits for a Problems row mentioning `code`; on a timeout, says which planted code ran. */
async function problem(page, code, repository) {
  await page.keyboard.press('Control+Shift+M');
  const row = page.locator('.markers-panel .monaco-list-row', { hasText: code }).first();
  try {
    await row.waitFor({ timeout: 45_000 });
  } catch (error) {
    throw new Error(
      `${code} never showed (planted code that ran: ${JSON.stringify(repository.ran())}): ${error.message}`,
      { cause: error },
    );
  }
}

/** Runs "Run Environment Check" and waits for its report to open. */
async function environmentCheck(page) {
  await runCommand(page, 'gpulens: Run Environment Check');
  const tab = page.locator('.tab', { hasText: 'gpulens environment check' }).first();
  await tab.waitFor({ timeout: 120_000 });
  await page
    .locator('.editor-instance .view-lines', { hasText: 'gpulens doctor' })
    .first()
    .waitFor();
}

/** The one language server's working directory and command line. */
function serverProcess(vscode) {
  const [pid, ...more] = vscode.processes('-m gpulens serve');
  assert.ok(pid && more.length === 0, `one language server runs: ${[pid, ...more]}`);
  return {
    cwd: readlinkSync(`/proc/${pid}/cwd`),
    argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean),
  };
}

function outside(folder, path) {
  const inner = relative(folder, path);
  return inner.startsWith('..') || inner === path;
}

let entry;
before(() => {
  entry = setup();
});

for (const trusted of [true, false]) {
  describe(`${trusted ? 'trusted' : 'untrusted'} folder holding planted modules`, () => {
    let vscode;
    let repository;
    before(async () => {
      // a trusted folder's settings are the user's to follow; an untrusted one's name an interpreter too
      repository = hostileRepository({ withSettings: !trusted });
      const trust = trusted
        ? { 'security.workspace.trust.enabled': false }
        : {
            'security.workspace.trust.enabled': true,
            'security.workspace.trust.startupPrompt': 'never',
            'security.workspace.trust.emptyWindow': false,
          };
      vscode = await startVSCode(entry, {
        name: trusted ? 'hostile-trusted' : 'hostile-untrusted',
        settings: { ...SETTINGS, ...trust },
        files: repository.files,
      });
    });
    after(async () => {
      await vscode?.close();
      repository?.remove();
    });

    it('serves findings without importing anything from the folder', async () => {
      const { page, folder } = vscode;
      await openFile(page, 'train_pitfalls.py');
      await problem(page, 'GPU001', repository);
      await page.locator('.statusbar-item', { hasText: 'CPU only' }).waitFor({ timeout: 45_000 });
      const server = serverProcess(vscode);
      log(`server: cwd ${server.cwd}, argv ${JSON.stringify(server.argv)}`);
      assert.ok(server.argv.includes('-P'), `the server runs with -P: ${server.argv}`);
      assert.ok(outside(folder, server.cwd), `the server's cwd ${server.cwd} is outside ${folder}`);
      if (!trusted) {
        // VS Code gave the extension the user's gpulens.python, not the folder's
        assert.equal(server.argv[0], PYTHON);
      }
      // the status probes have had time to run (they answer within seconds here)
      await page.waitForTimeout(3000);
      assert.deepEqual(repository.ran(), []);
    });

    it('runs the environment check without importing anything from the folder', async () => {
      const { page } = vscode;
      await environmentCheck(page);
      await screenshot(page, `environment-check-${trusted ? 'trusted' : 'untrusted'}`);
      assert.deepEqual(repository.ran(), []);
    });
  });
}

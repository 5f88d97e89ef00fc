// End-to-end harness: the packaged .vsix installed into a real VS Code build (code-server,
// installed once into .cache/ by setup.sh), served on 127.0.0.1 and driven by Debian's Chromium
// through playwright-core. Nothing is downloaded at test time but what setup.sh caches.

import { execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const EXTENSION_DIR = resolve(here, '../..');
export const REPO_ROOT = resolve(EXTENSION_DIR, '..');
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
export const CHROMIUM = process.env.GPULENS_CHROMIUM ?? '/usr/bin/chromium';

const version = JSON.parse(readFileSync(join(EXTENSION_DIR, 'package.json'), 'utf8')).version;
export const VSIX = process.env.GPULENS_VSIX ?? join(REPO_ROOT, 'dist', `gpulens-${version}.vsix`);
/** The repository's interpreter, where gpulens is installed editable (made by `make`). */
export const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');

const started = Date.now();
export function log(message) {
  process.stderr.write(`[e2e +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}\n`);
}

/** Installs code-server and Chromium when missing (cached); returns code-server's entry point. */
let vsixCopy = VSIX;
export function setup() {
  const out = execFileSync('bash', [join(here, 'setup.sh'), REPO_ROOT], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const entry = out.trim().split('\n').pop();
  if (!entry || !existsSync(entry))
    throw new Error(`setup.sh gave no code-server entry point (${entry})`);
  if (!existsSync(VSIX)) throw new Error(`${VSIX} is missing: run \`make vscode-package\` first`);
  // a copy: a \`make clean\` elsewhere during the run must not pull it away
  const copy = join(mkdtempSync(join(tmpdir(), 'gpulens-e2e-vsix-')), basename(VSIX));
  cpSync(VSIX, copy);
  vsixCopy = copy;
  if (!existsSync(PYTHON))
    throw new Error(`${PYTHON} is missing: run \`make\` (the Python venv) first`);
  return entry;
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * One VS Code: a fresh profile (user data, extensions) with the .vsix installed, the given user
 * settings, and a copy of `files` as the opened folder.
 */
export async function startVSCode(entry, { name, settings, files }) {
  const root = mkdtempSync(join(tmpdir(), `gpulens-e2e-${name}-`));
  const userData = join(root, 'user-data');
  const extensions = join(root, 'extensions');
  const folder = join(root, 'workspace');
  mkdirSync(join(userData, 'User'), { recursive: true });
  mkdirSync(folder, { recursive: true });
  for (const [target, source] of Object.entries(files)) cpSync(source, join(folder, target));
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  const config = join(root, 'config.yaml');
  writeFileSync(config, 'auth: none\ncert: false\n');
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(root, 'xdg-config'),
    XDG_DATA_HOME: join(root, 'xdg-data'),
  };
  const common = ['--config', config, '--extensions-dir', extensions, '--user-data-dir', userData];

  const t0 = Date.now();
  execFileSync(process.execPath, [entry, ...common, '--install-extension', vsixCopy], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  log(`${name}: .vsix installed in ${Date.now() - t0} ms`);

  const port = await freePort();
  const server = spawn(
    process.execPath,
    [
      entry,
      ...common,
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-getting-started-override',
      folder,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let output = '';
  server.stdout.on('data', (chunk) => (output += chunk));
  server.stderr.on('data', (chunk) => (output += chunk));
  await new Promise((resolveReady, reject) => {
    const deadline = setTimeout(
      () => reject(new Error(`code-server did not listen within 60 s:\n${output}`)),
      60_000,
    );
    const poll = setInterval(() => {
      if (/HTTP server listening/.test(output)) {
        clearInterval(poll);
        clearTimeout(deadline);
        resolveReady();
      }
    }, 100);
    server.once('exit', (code) => {
      clearInterval(poll);
      clearTimeout(deadline);
      reject(new Error(`code-server exited (${code}):\n${output}`));
    });
  });
  log(`${name}: code-server listening on 127.0.0.1:${port}`);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  page.setDefaultTimeout(30_000);
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
  log(`${name}: workbench loaded`);

  return {
    page,
    folder,
    output: () => output,
    /** Pids of this VS Code's processes whose command line holds `pattern`, leaving out
     * their own children: a child between fork and exec still shows its parent's command
     * line (the server starting a subprocess), and is not a second server. */
    processes(pattern) {
      const found = new Map();
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
          const [, parent, group] = stat
            .slice(stat.lastIndexOf(')') + 2)
            .split(' ')
            .map(Number);
          const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
          if (group === server.pid && command.includes(pattern)) found.set(Number(entry), parent);
        } catch {
          // gone while we looked
        }
      }
      return [...found].filter(([, parent]) => !found.has(parent)).map(([pid]) => pid);
    },
    async close() {
      await browser.close().catch(() => {});
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      await new Promise((r) => setTimeout(r, 300));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Opens a file of the folder through Quick Open and waits for its editor. */
export async function openFile(page, name) {
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
  await page
    .locator(`.tab.active[aria-label*="${name}"], .tab.active:has-text("${name}")`)
    .first()
    .waitFor();
  await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor();
}

/** Runs a command from the command palette by its title. */
export async function runCommand(page, title) {
  await page.keyboard.press('Control+Shift+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** Every text the editor shows, injected decoration text (`::after` content) included. */
export async function editorTexts(page) {
  return page.evaluate(() => {
    const texts = [];
    for (const el of document.querySelectorAll('.editor-instance .view-lines span')) {
      if (el.children.length === 0 && el.textContent) texts.push(el.textContent);
      for (const pseudo of ['::after', '::before']) {
        const content = getComputedStyle(el, pseudo).content;
        if (content && content !== 'none' && content !== 'normal')
          texts.push(content.replace(/^"|"$/g, ''));
      }
    }
    // the editor draws spaces of injected text as no-break spaces
    return texts.map((t) => t.replace(/\u00a0/g, ' '));
  });
}

/** Applies `gpulens check --format json` edits (1-based lines and columns) to a text. */
export function applyEdits(text, edits) {
  const lines = text.split('\n');
  const offset = (line, column) =>
    lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column - 1;
  const sorted = [...edits].sort((a, b) => offset(b.line, b.column) - offset(a.line, a.column));
  let out = text;
  for (const edit of sorted) {
    out =
      out.slice(0, offset(edit.line, edit.column)) +
      edit.new_text +
      out.slice(offset(edit.end_line, edit.end_column));
  }
  return out;
}

/** The findings of a file as the CLI reports them: the expected text of a fix comes from here. */
export function cliFindings(file) {
  try {
    return JSON.parse(
      execFileSync(PYTHON, ['-m', 'gpulens', 'check', '--format', 'json', file], {
        encoding: 'utf8',
      }),
    );
  } catch (error) {
    if (error.status === 1) return JSON.parse(error.stdout);
    throw error;
  }
}

/** `gpulens check --fix FILE`: the CLI's own fix-all, to compare the editor's with. */
export function fixFile(file) {
  try {
    execFileSync(PYTHON, ['-m', 'gpulens', 'check', '--fix', file], { stdio: 'ignore' });
  } catch (error) {
    if (error.status !== 1) throw error;
  }
}

export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `vscode-${name}.png`);
  await page.screenshot({ path });
  log(`screenshot ${path}`);
  return path;
}

/**
 * Which Python runs the language server: `gpulens.python`, else the interpreter selected in the
 * Python extension (through its public API), else `python3`; whether gpulens is in it; and how
 * every Python the extension starts is kept from importing the workspace's modules.
 */

import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';
import { traceError, traceInfo } from './logging';
import { readSettings } from './settings';

const PYTHON_EXTENSION_ID = 'ms-python.python';
const FALLBACK_PYTHON = 'python3';

export interface Interpreter {
  command: string;
  source: 'setting' | 'python-extension' | 'default';
}

const changed = new vscode.EventEmitter<void>();
/** Fires when the Python extension's selected interpreter changes. */
export const onDidChangeInterpreter: vscode.Event<void> = changed.event;

let api: PythonExtension | undefined;

/** Subscribes to the Python extension's interpreter changes, when it is installed. */
export async function initializePython(disposables: vscode.Disposable[]): Promise<void> {
  disposables.push(changed);
  if (!vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) return;
  try {
    api = await PythonExtension.api();
    disposables.push(
      api.environments.onDidChangeActiveEnvironmentPath((event) => {
        traceInfo(`Python extension: interpreter is now ${event.path}`);
        changed.fire();
      }),
    );
  } catch (error) {
    traceError('Python extension: its API did not load; using gpulens.python or python3', error);
    api = undefined;
  }
}

function insideWorkspace(file: string): boolean {
  return (vscode.workspace.workspaceFolders ?? []).some((folder) => {
    const relative = path.relative(folder.uri.fsPath, file);
    return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
  });
}

async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  if (!api) return undefined;
  try {
    const active = api.environments.getActiveEnvironmentPath(resource);
    const resolved = await api.environments.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath;
  } catch (error) {
    traceError('Python extension: cannot resolve the selected interpreter', error);
    return undefined;
  }
}

export async function resolveInterpreter(resource?: vscode.Uri): Promise<Interpreter> {
  const configured = readSettings(resource).python;
  if (configured) return { command: configured, source: 'setting' };
  const selected = await pythonExtensionInterpreter(resource);
  // an interpreter inside an untrusted folder is that folder's code: not run until it is trusted
  if (selected && (vscode.workspace.isTrusted || !insideWorkspace(selected))) {
    return { command: selected, source: 'python-extension' };
  }
  return { command: FALLBACK_PYTHON, source: 'default' };
}

/**
 * `python -m` and `python -c` put their working directory first on `sys.path`: started in the
 * workspace, the repository's `json.py` or `pygls/` would run. So every Python the extension
 * starts runs in this folder (the extension's global storage: the user's own, never shared)
 * and with `-P` (gpulens needs Python 3.11, which has it). Made on first use, mode 0700.
 */
export function privateDirectory(storage: vscode.Uri): string {
  mkdirSync(storage.fsPath, { recursive: true, mode: 0o700 });
  return storage.fsPath;
}

/** The first Python with `-P` (safe path), which gpulens requires anyway. */
const SAFE_PATH_PYTHON: [number, number] = [3, 11];

export type GpulensCheck =
  | { ok: true; version: string }
  | { ok: false; reason: 'no-python' | 'no-gpulens' | 'failed'; detail: string };

/**
 * Runs `python -c "import gpulens"` (in `cwd`, off the workspace) to tell a missing interpreter
 * from a missing package. PYTHONSAFEPATH and the first line keep the cwd off `sys.path` on any
 * Python version.
 */
export function checkGpulens(python: string, cwd: string): Promise<GpulensCheck> {
  const probe = [
    'import sys',
    'if sys.path[:1] == [""]: del sys.path[0]',
    'import gpulens',
    'sys.stdout.write(gpulens.__version__ + " %d.%d" % sys.version_info[:2])',
  ].join('\n');
  const options = {
    cwd,
    env: { ...process.env, PYTHONSAFEPATH: '1' },
    timeout: 30_000,
    windowsHide: true,
  };
  return new Promise((resolve) => {
    execFile(python, ['-c', probe], options, (error, stdout, stderr) => {
      if (!error) {
        const [version, pythonVersion = ''] = stdout.trim().split(' ');
        const [major, minor] = pythonVersion.split('.').map(Number);
        if (
          major < SAFE_PATH_PYTHON[0] ||
          (major === SAFE_PATH_PYTHON[0] && minor < SAFE_PATH_PYTHON[1])
        ) {
          resolve({
            ok: false,
            reason: 'failed',
            detail: `gpulens needs Python ${SAFE_PATH_PYTHON.join('.')} or newer; ${python} is Python ${pythonVersion}`,
          });
          return;
        }
        resolve({ ok: true, version });
        return;
      }
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES') {
        resolve({ ok: false, reason: 'no-python', detail: `${python} cannot be run (${code})` });
      } else if (/No module named '?gpulens'?/.test(stderr)) {
        resolve({ ok: false, reason: 'no-gpulens', detail: stderr.trim() });
      } else {
        resolve({ ok: false, reason: 'failed', detail: (stderr || error.message).trim() });
      }
    });
  });
}

/** A shell-safe rendering of an interpreter path for a terminal command line. */
export function quoteForShell(command: string): string {
  return /^[\w@%+=:,./-]+$/.test(command) ? command : `'${command.replace(/'/g, `'\\''`)}'`;
}

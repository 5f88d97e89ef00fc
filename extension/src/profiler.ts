/**
 * "Profile cell" for `# %%` cells of a script: through the server's `gpulens.profileCell`
 * command when it offers one, else `gpulens profile FILE --line L --format json` in the server's
 * interpreter. A cancellable progress notification; results go to the ProfileView. Off in an
 * untrusted workspace: profiling runs the workspace's code.
 */

import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { codeCellStarts } from './core/cells';
import { runMessage } from './core/lineFormat';
import { parseProfile, profileSummary, type Profile } from './core/profile';
import { logChannel, traceError, traceInfo, traceWarn } from './logging';
import type { ProfileView } from './profileView';
import { resolveInterpreter } from './python';
import type { ServerSupervisor } from './server';
import { readSettings } from './settings';

/** Internal: profile the cell holding a line; arguments `(uri: string, line: number)`, line 0-based. */
export const PROFILE_AT_COMMAND = 'gpulens.profileCellAt';
export const PROFILE_AT_CURSOR_COMMAND = 'gpulens.profileCellAtCursor';
export const CLEAR_COMMAND = 'gpulens.clearProfileResults';
/** The server's command (DESIGN.md): `{uri, line}` -> profile payload. */
export const SERVER_PROFILE_COMMAND = 'gpulens.profileCell';
/** The server's command (DESIGN.md): `{uri}` -> forget that document's profile. */
export const SERVER_CLEAR_COMMAND = 'gpulens.clearProfile';

export const UNTRUSTED_MESSAGE =
  'gpulens: profiling is off in an untrusted workspace, because it runs the workspace\'s code. Trust the folder to profile; findings and quick-fixes work without it.';

/** Says why profiling is off, with a way to trust the folder; true when it may run. */
export function profilingAllowed(): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE, 'Manage Workspace Trust').then((choice) => {
    if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
  });
  return false;
}

class CliError extends Error {}

function runCli(
  python: string,
  args: string[],
  cwd: string,
  token: vscode.CancellationToken,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    traceInfo(`$ ${python} ${args.join(' ')}`);
    // its own process group, so a cancel also stops the runner's child
    const child = spawn(python, args, { cwd, detached: process.platform !== 'win32', env: { ...process.env, PYTHONUNBUFFERED: '1' } });
    const stdout: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const cancel = token.onCancellationRequested(() => {
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGTERM');
        else child.kill();
      } catch {
        child.kill();
      }
    });
    child.on('error', (error) => {
      cancel.dispose();
      reject(new CliError(`${python} could not be run: ${error.message}`));
    });
    child.on('close', (code) => {
      cancel.dispose();
      if (token.isCancellationRequested) {
        reject(new vscode.CancellationError());
        return;
      }
      if (stderr.trim()) logChannel().appendLine(stderr.trimEnd());
      const text = Buffer.concat(stdout).toString('utf8');
      if (code === 0 || code === 1) {
        try {
          resolve(JSON.parse(text));
          return;
        } catch {
          // fall through: not a payload
        }
      }
      const last = stderr.trim().split('\n').pop() ?? '';
      reject(new CliError(last || `gpulens profile exited with status ${String(code)}`));
    });
  });
}

export class CellProfiler implements vscode.Disposable {
  private readonly subscriptions: vscode.Disposable[] = [];
  private running = new Set<string>();

  constructor(
    private readonly server: ServerSupervisor,
    private readonly view: ProfileView,
  ) {
    this.subscriptions.push(
      vscode.commands.registerCommand(PROFILE_AT_COMMAND, (uri: string | vscode.Uri, line: number) =>
        this.profile(typeof uri === 'string' ? vscode.Uri.parse(uri) : uri, line),
      ),
      vscode.commands.registerCommand(PROFILE_AT_CURSOR_COMMAND, () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor || editor.document.languageId !== 'python') {
          void vscode.window.showInformationMessage('gpulens: open a Python file and put the cursor in a # %% cell to profile it.');
          return;
        }
        return this.profile(editor.document.uri, editor.selection.active.line);
      }),
      vscode.commands.registerCommand(CLEAR_COMMAND, (uri?: unknown) => this.clear(uri instanceof vscode.Uri ? uri : undefined)),
    );
  }

  /** Profiles the cell holding 0-based `line` of the file. */
  async profile(uri: vscode.Uri, line: number): Promise<void> {
    if (!profilingAllowed()) return;
    const document = await vscode.workspace.openTextDocument(uri);
    if (document.uri.scheme !== 'file') {
      void vscode.window.showWarningMessage('gpulens: save the file first; profiling runs the file on disk.');
      return;
    }
    const key = `${uri.toString()}#${line}`;
    if (this.running.has(key)) return;
    if (document.isDirty && !(await document.save())) {
      void vscode.window.showWarningMessage('gpulens: the file could not be saved, so it was not profiled.');
      return;
    }
    const starts = codeCellStarts(document.getText());
    const cellNumber = starts.filter((start) => start <= line).length;
    const label = cellNumber > 0 ? `cell ${cellNumber}` : 'the preamble';
    this.running.add(key);
    let cancelled = false;
    try {
      const { raw, viaServer } = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `gpulens: profiling ${label} of ${path.basename(document.fileName)}…`,
          cancellable: true,
        },
        (_progress, token) => {
          token.onCancellationRequested(() => {
            cancelled = true;
          });
          return this.run(document, line, token);
        },
      );
      const parsed = parseProfile(raw);
      if (!parsed.ok) throw new CliError(parsed.error);
      this.present(document, cellNumber, parsed.value, viaServer);
    } catch (error) {
      if (cancelled || error instanceof vscode.CancellationError) {
        traceInfo(`profile of ${label} cancelled`);
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      traceError(`profile of ${label} failed`, error);
      void vscode.window.showErrorMessage(`gpulens: profiling ${label} failed: ${message}`, 'Show Log').then((c) => {
        if (c) logChannel().show();
      });
    } finally {
      this.running.delete(key);
    }
  }

  private async run(
    document: vscode.TextDocument,
    line: number,
    token: vscode.CancellationToken,
  ): Promise<{ raw: unknown; viaServer: boolean }> {
    if (this.server.hasServerCommand(SERVER_PROFILE_COMMAND)) {
      const raw = await this.server.executeServerCommand(SERVER_PROFILE_COMMAND, [{ uri: document.uri.toString(), line }], token);
      return { raw, viaServer: true };
    }
    const settings = readSettings(document.uri);
    const python = this.server.python ?? (await resolveInterpreter(document.uri)).command;
    // -P: gpulens itself imports nothing from the folder; the profiled script still sees its own
    const args = ['-P', '-m', 'gpulens', 'profile', document.uri.fsPath, '--line', String(line + 1), '--format', 'json'];
    args.push('--timeout', String(settings.profileTimeoutSeconds));
    if (settings.profilePython) args.push('--python', settings.profilePython);
    const folder = vscode.workspace.getWorkspaceFolder(document.uri)?.uri.fsPath ?? path.dirname(document.uri.fsPath);
    return { raw: await runCli(python, args, folder, token), viaServer: false };
  }

  private present(document: vscode.TextDocument, cellNumber: number, profile: Profile, viaServer: boolean): void {
    // the server draws the text as inlay hints with their hover; the client adds the heat tint
    const withText = !(viaServer && this.server.hasInlayHints());
    this.view.show(document.uri, `cell:${profile.cell ?? cellNumber}`, profile, 0, withText);
    if (profile.output) logChannel().appendLine(profile.output.trimEnd());
    for (const warning of profile.warnings) traceWarn(`profile: ${warning}`);
    const message = viaServer ? undefined : runMessage(profile); // the server says its own
    if (message) {
      const type = profile.error?.type;
      if (type === 'Cancelled') void vscode.window.showInformationMessage(message);
      else if (type === 'Timeout' || !profile.error) void vscode.window.showWarningMessage(message);
      else void vscode.window.showErrorMessage(message);
    }
    if (profile.lines.length > 0) vscode.window.setStatusBarMessage(`$(pulse) gpulens: ${profileSummary(profile)}`, 8_000);
  }

  /** Clears one document's results, or all: the tint here, the server's inlay hints there. */
  private async clear(uri?: vscode.Uri): Promise<void> {
    const documents = uri ? [uri] : this.view.documents();
    this.view.clear(uri);
    if (!this.server.hasServerCommand(SERVER_CLEAR_COMMAND)) return;
    for (const document of documents) {
      try {
        await this.server.executeServerCommand(SERVER_CLEAR_COMMAND, [{ uri: document.toString() }]);
      } catch (error) {
        traceWarn(`${SERVER_CLEAR_COMMAND} failed for ${document.toString()}: ${String(error)}`);
      }
    }
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}

/**
 * "Profile cell" for `# %%` cells of a script, through the server's `gpulens.profileCell`
 * command: a cancellable progress notification; the server draws the costs as inlay hints
 * (and says how the run ended), the ProfileView adds the heat tint. Off in an untrusted
 * workspace: profiling runs the workspace's code.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import { codeCellStarts } from './core/cells';
import { parseProfile } from './core/profile';
import { logChannel, traceError, traceInfo, traceWarn } from './logging';
import type { ProfileView } from './profileView';
import type { ServerSupervisor } from './server';

/** Internal: profile the cell holding a line; arguments `(uri: string, line: number)`, line 0-based. */
export const PROFILE_AT_COMMAND = 'gpulens.profileCellAt';
export const PROFILE_AT_CURSOR_COMMAND = 'gpulens.profileCellAtCursor';
export const CLEAR_COMMAND = 'gpulens.clearProfileResults';
/** The server's command (DESIGN.md): `{uri, line}` -> profile payload. */
export const SERVER_PROFILE_COMMAND = 'gpulens.profileCell';
/** The server's command (DESIGN.md): `{uri}` -> forget that document's profile. */
export const SERVER_CLEAR_COMMAND = 'gpulens.clearProfile';

export const UNTRUSTED_MESSAGE =
  "gpulens: profiling is off in an untrusted workspace, because it runs the workspace's code. Trust the folder to profile; findings and quick-fixes work without it.";

/** Says why profiling is off, with a way to trust the folder; true when it may run. */
export function profilingAllowed(): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window
    .showWarningMessage(UNTRUSTED_MESSAGE, 'Manage Workspace Trust')
    .then((choice) => {
      if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
    });
  return false;
}

export class CellProfiler implements vscode.Disposable {
  private readonly subscriptions: vscode.Disposable[] = [];
  private running = new Set<string>();

  constructor(
    private readonly server: ServerSupervisor,
    private readonly view: ProfileView,
  ) {
    this.subscriptions.push(
      vscode.commands.registerCommand(
        PROFILE_AT_COMMAND,
        (uri: string | vscode.Uri, line: number) =>
          this.profile(typeof uri === 'string' ? vscode.Uri.parse(uri) : uri, line),
      ),
      vscode.commands.registerCommand(PROFILE_AT_CURSOR_COMMAND, () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor || editor.document.languageId !== 'python') {
          void vscode.window.showInformationMessage(
            'gpulens: open a Python file and put the cursor in a # %% cell to profile it.',
          );
          return;
        }
        return this.profile(editor.document.uri, editor.selection.active.line);
      }),
      vscode.commands.registerCommand(CLEAR_COMMAND, (uri?: unknown) =>
        this.clear(uri instanceof vscode.Uri ? uri : undefined),
      ),
    );
  }

  /** Profiles the cell holding 0-based `line` of the file. */
  async profile(uri: vscode.Uri, line: number): Promise<void> {
    if (!profilingAllowed()) return;
    const document = await vscode.workspace.openTextDocument(uri);
    if (document.uri.scheme !== 'file') {
      void vscode.window.showWarningMessage(
        'gpulens: save the file first; profiling runs the file on disk.',
      );
      return;
    }
    const key = `${uri.toString()}#${line}`;
    if (this.running.has(key)) return;
    if (document.isDirty && !(await document.save())) {
      void vscode.window.showWarningMessage(
        'gpulens: the file could not be saved, so it was not profiled.',
      );
      return;
    }
    const starts = codeCellStarts(document.getText());
    const cellNumber = starts.filter((start) => start <= line).length;
    const label = cellNumber > 0 ? `cell ${cellNumber}` : 'the preamble';
    this.running.add(key);
    // set from the cancellation callback, which flow analysis does not follow
    const cancel = { requested: false };
    try {
      const raw = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `gpulens: profiling ${label} of ${path.basename(document.fileName)}…`,
          cancellable: true,
        },
        (_progress, token) => {
          token.onCancellationRequested(() => {
            cancel.requested = true;
          });
          return this.server.executeServerCommand(
            SERVER_PROFILE_COMMAND,
            [{ uri: document.uri.toString(), line }],
            token,
          );
        },
      );
      const parsed = parseProfile(raw);
      if (!parsed.ok) throw new Error(parsed.error);
      const profile = parsed.value;
      // the server draws the text as inlay hints with their hover, and shows the run's message
      this.view.show(document.uri, `cell:${profile.cell ?? cellNumber}`, profile, 0, false);
      if (profile.output) logChannel().appendLine(profile.output.trimEnd());
      for (const note of profile.notes) traceInfo(`profile: ${note}`);
      if (profile.lines.length > 0)
        vscode.window.setStatusBarMessage(`$(pulse) ${profile.summary}`, 8_000);
    } catch (error) {
      if (cancel.requested || error instanceof vscode.CancellationError) {
        traceInfo(`profile of ${label} cancelled`);
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      traceError(`profile of ${label} failed`, error);
      void vscode.window
        .showErrorMessage(`gpulens: profiling ${label} failed: ${message}`, 'Show Log')
        .then((c) => {
          if (c) logChannel().show();
        });
    } finally {
      this.running.delete(key);
    }
  }

  /** Clears one document's results, or all: the tint here, the server's inlay hints there. */
  private async clear(uri?: vscode.Uri): Promise<void> {
    const documents = uri ? [uri] : this.view.documents();
    this.view.clear(uri);
    if (!this.server.runningClient) return;
    for (const document of documents) {
      try {
        await this.server.executeServerCommand(SERVER_CLEAR_COMMAND, [
          { uri: document.toString() },
        ]);
      } catch (error) {
        traceWarn(`${SERVER_CLEAR_COMMAND} failed for ${document.toString()}: ${String(error)}`);
      }
    }
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}

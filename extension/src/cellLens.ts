/**
 * "Profile cell" above each `# %%` cell. When the language server offers code lenses itself,
 * they are used instead (their `gpulens.profileCell` command is routed to the same profiler).
 */

import * as vscode from 'vscode';
import { codeCellStarts } from './core/cells';
import { PROFILE_AT_COMMAND, SERVER_CLEAR_COMMAND, SERVER_PROFILE_COMMAND } from './profiler';
import type { ServerSupervisor } from './server';
import { readSettings } from './settings';

export class CellLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly server: ServerSupervisor) {
    this.subscriptions = [
      this.changed,
      server.onDidChangeClient(() => this.changed.fire()),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.changed.fire()),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('gpulens.profile.codeLens')) this.changed.fire();
      }),
      vscode.languages.registerCodeLensProvider({ scheme: 'file', language: 'python' }, this),
    ];
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!readSettings(document.uri).profileCodeLens || this.server.hasCodeLenses()) return [];
    const title = vscode.workspace.isTrusted ? '$(pulse) Profile cell' : '$(circle-slash) Profile cell (trust the folder to run it)';
    return codeCellStarts(document.getText()).map(
      (line) =>
        new vscode.CodeLens(new vscode.Range(line, 0, line, 0), {
          title,
          tooltip: 'Run this cell (and the cells before it) under the gpulens profiler and show each line\'s GPU costs',
          command: PROFILE_AT_COMMAND,
          arguments: [document.uri.toString(), line],
        }),
    );
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}

/** A server lens or command `gpulens.profileCell {uri, line}` goes through the client's profiler. */
export function profileCommandArguments(command: string, args: unknown[]): [string, number] | undefined {
  if (command !== SERVER_PROFILE_COMMAND) return undefined;
  const first = args[0];
  if (typeof first !== 'object' || first === null) return undefined;
  const { uri, line } = first as { uri?: unknown; line?: unknown };
  return typeof uri === 'string' && typeof line === 'number' ? [uri, line] : undefined;
}

/** The document of a server `gpulens.clearProfile {uri}`, whose tint the client clears too. */
export function clearedDocument(command: string, args: unknown[]): string | undefined {
  if (command !== SERVER_CLEAR_COMMAND) return undefined;
  const first = args[0];
  if (typeof first === 'string') return first;
  const uri = typeof first === 'object' && first !== null ? (first as { uri?: unknown }).uri : undefined;
  return typeof uri === 'string' ? uri : undefined;
}

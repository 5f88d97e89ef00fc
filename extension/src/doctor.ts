/** "Run environment check": `gpulens doctor` in the server's interpreter, shown read-only. */

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { traceError } from './logging';
import type { ServerSupervisor } from './server';
import { resolveInterpreter } from './python';

const SCHEME = 'gpulens-doctor';

class DoctorDocuments implements vscode.TextDocumentContentProvider {
  readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
  }
}

/** `cwd` is the extension's private folder: with `-P`, nothing in the workspace is importable. */
function runDoctor(python: string, cwd: string, token: vscode.CancellationToken): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      python,
      ['-P', '-m', 'gpulens', 'doctor'],
      { cwd, timeout: 120_000, maxBuffer: 8 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const header = `$ ${python} -P -m gpulens doctor\n\n`;
        const code =
          error && typeof (error as { code?: unknown }).code === 'number'
            ? (error as { code: number }).code
            : 0;
        if (error && !stdout) {
          resolve(
            `${header}The environment check did not run: ${stderr.trim() || error.message}\n`,
          );
          return;
        }
        resolve(
          `${header}${stdout}${stderr ? `\n${stderr}` : ''}${code ? `\n(exit status ${code})\n` : ''}`,
        );
      },
    );
    token.onCancellationRequested(() => child.kill());
  });
}

export function registerEnvironmentCheck(
  command: string,
  server: ServerSupervisor,
): vscode.Disposable {
  const documents = new DoctorDocuments();
  return vscode.Disposable.from(
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, documents),
    vscode.commands.registerCommand(command, async () => {
      const python = server.python ?? (await resolveInterpreter()).command;
      const uri = vscode.Uri.from({ scheme: SCHEME, path: '/gpulens environment check.txt' });
      try {
        const text = await vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: 'gpulens: checking the environment…',
            cancellable: true,
          },
          (_progress, token) => runDoctor(python, server.workDir, token),
        );
        documents.set(uri, text);
        const document = await vscode.workspace.openTextDocument(uri);
        await vscode.window.showTextDocument(document, { preview: true });
      } catch (error) {
        traceError('environment check failed', error);
        void vscode.window.showErrorMessage(
          `gpulens: the environment check failed: ${String(error)}`,
        );
      }
    }),
  );
}

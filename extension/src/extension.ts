/**
 * Wiring only: log channel -> Python interpreter -> language server (restarted when the
 * interpreter or `gpulens.python` changes) -> status bar, profiling, notebooks, commands.
 * Every disposable goes into `context.subscriptions`.
 */

import * as vscode from 'vscode';
import { CodeLensRequest, type Middleware } from 'vscode-languageclient/node';
import { registerEnvironmentCheck } from './doctor';
import { createLogChannel, logChannel, traceInfo } from './logging';
import { registerNotebookProfiling } from './notebook';
import { CellProfiler, PROFILE_AT_COMMAND } from './profiler';
import { ProfileView } from './profileView';
import { initializePython, onDidChangeInterpreter, privateDirectory } from './python';
import { clearedDocument, profileCommandArguments } from './routing';
import { ServerSupervisor } from './server';
import { affectsServer, readSettings } from './settings';
import { ENVIRONMENT_CHECK_COMMAND, GpuStatusBar } from './statusBar';

let server: ServerSupervisor | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(createLogChannel());
  traceInfo(
    `gpulens ${(context.extension.packageJSON as { version: string }).version} activating (workspace trusted: ${String(vscode.workspace.isTrusted)})`,
  );

  // the server's own profile command and lenses run through the client's profiler (progress, trust)
  const view = new ProfileView();
  const middleware: Middleware = {
    executeCommand: (command, args, next) => {
      const routed = profileCommandArguments(command, args);
      if (routed) return vscode.commands.executeCommand(PROFILE_AT_COMMAND, ...routed);
      const cleared = clearedDocument(command, args);
      if (cleared) view.clear(vscode.Uri.parse(cleared));
      const result: unknown = next(command, args);
      return result;
    },
    // "Profile cell" above each `# %%` cell, unless `gpulens.profile.codeLens` is off
    provideCodeLenses: (document, token, next) =>
      readSettings(document.uri).profileCodeLens ? next(document, token) : [],
  };
  server = new ServerSupervisor(middleware, privateDirectory(context.globalStorageUri));
  context.subscriptions.push(
    server,
    view,
    new GpuStatusBar(server),
    new CellProfiler(server, view),
    registerNotebookProfiling(view),
    registerEnvironmentCheck(ENVIRONMENT_CHECK_COMMAND, server),
    vscode.commands.registerCommand('gpulens.restartServer', () =>
      server?.restart('asked from the command palette'),
    ),
    vscode.commands.registerCommand('gpulens.showLog', () => {
      logChannel().show();
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (affectsServer(event)) void server?.restart('gpulens.python changed');
      if (event.affectsConfiguration('gpulens.profile.codeLens')) refreshCodeLenses();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() =>
      server?.restart('the workspace is trusted now'),
    ),
  );

  await initializePython(context.subscriptions);
  context.subscriptions.push(
    onDidChangeInterpreter(() => server?.restart('the Python interpreter changed')),
  );
  // not awaited: activation must not wait for the interpreter check or the server's start
  void server.start();
}

/** Asks the editor for the server's lenses again (their setting changed). */
function refreshCodeLenses(): void {
  const lenses = server?.runningClient?.getFeature(CodeLensRequest.method);
  for (const editor of vscode.window.visibleTextEditors) {
    const provider = lenses?.getProvider(editor.document);
    if (provider) {
      provider.onDidChangeCodeLensEmitter.fire();
      return; // one emitter serves every document of the registration
    }
  }
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
  server = undefined;
}

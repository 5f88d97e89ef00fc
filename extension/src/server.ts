/**
 * The language server's life: `<python> -m gpulens serve` over stdio through
 * vscode-languageclient; started after checking gpulens is installed, restarted with back-off
 * when it stops on its own, restarted on request. Nothing here can take the window down: every
 * failure ends in a state the status bar shows and a line in the log.
 */

import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { nextAttempt, restartDelayMs } from './core/backoff';
import { logChannel, traceError, traceInfo, traceWarn } from './logging';
import { checkGpulens, quoteForShell, resolveInterpreter, type Interpreter } from './python';
import { SECTION, serverSettings } from './settings';

export const STATUS_METHOD = 'gpulens/status';

export type ServerState =
  | { kind: 'starting'; python?: string }
  | { kind: 'running'; python: string; version: string }
  | { kind: 'restarting'; python: string }
  | { kind: 'unavailable'; python: string; message: string };

export class ServerSupervisor implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: Interpreter | undefined;
  private state: ServerState = { kind: 'starting' };
  private queue: Promise<void> = Promise.resolve();
  private attempt = 0;
  private startedAt = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private disposed = false;
  private warnedCrash = false;
  private installTerminal: vscode.Terminal | undefined;

  private readonly stateChanged = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateChanged.event;
  private readonly statusReceived = new vscode.EventEmitter<unknown>();
  /** Every `gpulens/status` payload, raw (the status bar parses it). */
  readonly onStatus = this.statusReceived.event;
  private readonly clientChanged = new vscode.EventEmitter<LanguageClient | undefined>();
  readonly onDidChangeClient = this.clientChanged.event;
  private readonly subscriptions: vscode.Disposable[] = [];

  /**
   * `middleware`: the client's hooks; `workDir`: the private folder every Python it starts runs
   * in (see `privateDirectory`).
   */
  constructor(
    private readonly middleware: Middleware,
    readonly workDir: string,
  ) {
    this.subscriptions.push(
      this.stateChanged,
      this.statusReceived,
      this.clientChanged,
      vscode.window.onDidCloseTerminal((terminal) => {
        if (terminal === this.installTerminal) {
          this.installTerminal = undefined;
          void this.restart('the install terminal closed');
        }
      }),
    );
  }

  get currentState(): ServerState {
    return this.state;
  }

  get python(): string | undefined {
    return this.interpreter?.command;
  }

  get runningClient(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  async executeServerCommand(
    command: string,
    args: unknown[],
    token?: vscode.CancellationToken,
  ): Promise<unknown> {
    const client = this.runningClient;
    if (!client) throw new Error('the gpulens language server is not running');
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token);
  }

  async requestStatus(): Promise<void> {
    const client = this.runningClient;
    if (!client) return;
    try {
      this.statusReceived.fire(await client.sendRequest(STATUS_METHOD));
    } catch (error) {
      traceWarn(`${STATUS_METHOD} request failed: ${String(error)}`);
    }
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  restart(reason: string): Promise<void> {
    traceInfo(`restarting the language server: ${reason}`);
    this.attempt = 0;
    this.warnedCrash = false;
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    // one start or stop at a time: an interpreter change during a start waits for it
    this.queue = this.queue.then(step, step).catch((error: unknown) => {
      traceError('language server: unexpected failure', error);
    });
    return this.queue;
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.stateChanged.fire(state);
  }

  private async doStart(): Promise<void> {
    if (this.disposed) return;
    clearTimeout(this.restartTimer);
    const resource =
      vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    const interpreter = await resolveInterpreter(resource);
    this.interpreter = interpreter;
    const python = interpreter.command;
    this.setState({ kind: 'starting', python });
    traceInfo(`Python for the language server: ${python} (${interpreter.source})`);

    const check = await checkGpulens(python, this.workDir);
    if (!check.ok) {
      this.reportMissing(python, check.reason, check.detail);
      return;
    }

    // -P and a private cwd: nothing in the workspace is importable by the server itself
    const serverOptions: ServerOptions = {
      command: python,
      args: ['-P', '-m', 'gpulens', 'serve'],
      options: {
        cwd: this.workDir,
        env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' },
      },
    };
    let client: LanguageClient | undefined = undefined;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        { scheme: 'vscode-notebook-cell', language: 'python' },
      ],
      outputChannel: logChannel(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // the server runs no interpreter named in settings unless the folder is trusted; a grant
      // of trust restarts the server (extension.ts), so this is never stale
      initializationOptions: {
        [SECTION]: serverSettings(),
        workspaceTrusted: vscode.workspace.isTrusted,
      },
      synchronize: { configurationSection: SECTION },
      middleware: this.middleware,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          if (client && (this.stopping.has(client) || this.client !== client)) {
            return { action: CloseAction.DoNotRestart, handled: true };
          }
          this.onServerClosed(python);
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    // the error handler above reads `client`: it names this start's client, not a later one

    client = new LanguageClient('gpulens', 'gpulens', serverOptions, clientOptions);
    this.client = client;
    client.onNotification(STATUS_METHOD, (payload: unknown) => {
      this.statusReceived.fire(payload);
    });
    try {
      this.startedAt = Date.now();
      await client.start();
    } catch (error) {
      traceError('language server: did not start', error);
      this.onServerClosed(python);
      return;
    }
    this.setState({ kind: 'running', python, version: check.version });
    this.clientChanged.fire(client);
    traceInfo(`language server running: gpulens ${check.version} on ${python}`);
    void this.requestStatus();
  }

  private onServerClosed(python: string): void {
    if (this.disposed || this.state.kind === 'unavailable') return;
    this.clientChanged.fire(undefined);
    this.attempt = nextAttempt(this.attempt, Date.now() - this.startedAt);
    const inMs = restartDelayMs(this.attempt - 1);
    // no figure of our own in what a user reads: the wait grows with each stop in a row
    traceWarn(`language server stopped; restart number ${String(this.attempt)} in a row`);
    this.setState({ kind: 'restarting', python });
    if (!this.warnedCrash) {
      this.warnedCrash = true;
      void vscode.window
        .showWarningMessage(
          'The gpulens language server stopped; it restarts on its own. The log says why.',
          'Show Log',
        )
        .then((choice) => {
          if (choice) logChannel().show();
        });
    }
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      void this.enqueue(async () => {
        await this.doStop();
        await this.doStart();
      });
    }, inMs);
  }

  private readonly stopping = new Set<LanguageClient>();

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    this.stopping.add(client);
    this.clientChanged.fire(undefined);
    try {
      if (client.state === State.Running || client.state === State.Starting)
        await client.stop(2_000);
    } catch (error) {
      traceWarn(`language server: stop failed (${String(error)}); it is dropped`);
    }
    try {
      await client.dispose(1_000);
    } catch {
      // already stopped: nothing left to release
    }
    this.stopping.delete(client);
  }

  private reportMissing(
    python: string,
    reason: 'no-python' | 'no-gpulens' | 'failed',
    detail: string,
  ): void {
    traceError(`language server: cannot start with ${python}: ${detail}`);
    const install = 'Install gpulens';
    const settings = 'Open Settings';
    const select = 'Select Interpreter';
    const retry = 'Retry';
    const actions: string[] = [];
    let message: string;
    if (reason === 'no-gpulens') {
      message = `gpulens is not installed in ${python}: install it there (pip install gpulens), or point gpulens.python at an interpreter that has it.`;
      actions.push(install, settings);
    } else if (reason === 'no-python') {
      message = `Python ${python} could not be run: select an interpreter, or set gpulens.python.`;
      actions.push(settings);
    } else {
      message = `gpulens did not load in ${python}; the log has the error.`;
      actions.push(retry, settings);
    }
    if (vscode.extensions.getExtension('ms-python.python')) actions.push(select);
    this.setState({ kind: 'unavailable', python, message });
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === install) this.openInstallTerminal(python);
      else if (choice === settings)
        void vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.python`);
      else if (choice === select) void vscode.commands.executeCommand('python.setInterpreter');
      else if (choice === retry) void this.restart('retry');
    });
  }

  /** The user asked for it: pip runs in a terminal they can read; closing it restarts the server. */
  openInstallTerminal(python: string): void {
    const terminal = vscode.window.createTerminal({ name: 'gpulens: install' });
    this.installTerminal = terminal;
    terminal.show();
    terminal.sendText(`${quoteForShell(python)} -m pip install gpulens && exit`);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    clearTimeout(this.restartTimer);
    await this.doStop();
    for (const d of this.subscriptions) d.dispose();
  }
}

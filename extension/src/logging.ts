/** The gpulens output channel: the server's log (window/logMessage, stderr) and the client's. */

import * as vscode from 'vscode';

let channel: vscode.LogOutputChannel | undefined;

export function createLogChannel(): vscode.LogOutputChannel {
  channel = vscode.window.createOutputChannel('gpulens', { log: true });
  return channel;
}

export function logChannel(): vscode.LogOutputChannel {
  if (!channel) throw new Error('gpulens: the log channel is used before activation');
  return channel;
}

export function traceInfo(message: string): void {
  channel?.info(message);
}

export function traceWarn(message: string): void {
  channel?.warn(message);
}

export function traceError(message: string, error?: unknown): void {
  const detail =
    error instanceof Error
      ? `: ${error.stack ?? error.message}`
      : error === undefined
        ? ''
        : `: ${typeof error === 'string' ? error : JSON.stringify(error)}`;
  channel?.error(`${message}${detail}`);
}

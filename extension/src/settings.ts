/** The `gpulens` settings section, as the extension uses it and as the server receives it. */

import * as vscode from 'vscode';

export const SECTION = 'gpulens';

export interface ExtensionSettings {
  /** Interpreter for the language server; empty: the Python extension's, else python3. */
  python: string;
  device: string | undefined;
  profilePython: string;
  profileTimeoutSeconds: number;
  profileCodeLens: boolean;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

export function readSettings(scope?: vscode.ConfigurationScope): ExtensionSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const timeout = config.get<number>('profile.timeoutSeconds');
  return {
    python: text(config.get('python')),
    device: text(config.get('device')) || undefined,
    profilePython: text(config.get('profile.python')),
    profileTimeoutSeconds: typeof timeout === 'number' && timeout > 0 ? timeout : 300,
    profileCodeLens: config.get<boolean>('profile.codeLens') !== false,
  };
}

/** The section as a plain object, for the server's initializationOptions (`{gpulens: {...}}`). */
export function serverSettings(scope?: vscode.ConfigurationScope): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const plain: Record<string, unknown> = {};
  for (const key of ['device', 'statusIntervalSeconds', 'rules', 'profile']) {
    const value = config.get(key);
    if (value !== undefined && value !== null) plain[key] = value;
  }
  return JSON.parse(JSON.stringify(plain)) as Record<string, unknown>;
}

/** Writes the device where the user will see it: the workspace when one is open. */
export async function writeDevice(device: string): Promise<void> {
  const target = vscode.workspace.workspaceFolders?.length
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration(SECTION).update('device', device, target);
}

export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.python`);
}

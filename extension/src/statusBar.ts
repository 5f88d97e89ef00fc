/**
 * The GPU item in the status bar, drawn from `gpulens/status` as the server words it; a click
 * opens the device pick (writes `gpulens.device` and tells the server through
 * `gpulens.selectDevice`) and the environment check.
 */

import * as vscode from 'vscode';
import { drawStatusBar, parseStatus, type DeviceStatus } from './core/status';
import { traceError, traceWarn } from './logging';
import type { ServerState, ServerSupervisor } from './server';
import { readSettings, writeDevice } from './settings';

export const PICK_DEVICE_COMMAND = 'gpulens.pickDevice';
export const ENVIRONMENT_CHECK_COMMAND = 'gpulens.runEnvironmentCheck';
const SELECT_DEVICE_SERVER_COMMAND = 'gpulens.selectDevice';

export class GpuStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private status: DeviceStatus | undefined;
  private serverState: ServerState;
  private readonly subscriptions: vscode.Disposable[] = [];
  private lastParseError = '';

  constructor(private readonly server: ServerSupervisor) {
    this.item = vscode.window.createStatusBarItem(
      'gpulens.status',
      vscode.StatusBarAlignment.Right,
      100,
    );
    this.item.name = 'gpulens GPU status';
    this.item.command = PICK_DEVICE_COMMAND;
    this.serverState = server.currentState;
    this.subscriptions.push(
      this.item,
      server.onStatus((payload) => {
        this.onPayload(payload);
      }),
      server.onDidChangeState((state) => {
        this.serverState = state;
        this.render();
      }),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('gpulens.device')) this.render();
      }),
      vscode.commands.registerCommand(PICK_DEVICE_COMMAND, () => this.pickDevice()),
    );
    this.render();
    this.item.show();
  }

  private onPayload(payload: unknown): void {
    const parsed = parseStatus(payload);
    if (!parsed.ok) {
      if (parsed.error !== this.lastParseError) traceWarn(`gpulens/status: ${parsed.error}`);
      this.lastParseError = parsed.error;
      return;
    }
    this.status = parsed.value;
    this.render();
  }

  private render(): void {
    const state = this.serverState;
    this.item.backgroundColor = undefined;
    if (state.kind === 'unavailable') {
      this.item.text = '$(warning) gpulens';
      this.item.tooltip = new vscode.MarkdownString(
        `**gpulens is not running**\n\n${state.message}`,
      );
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      return;
    }
    if (state.kind === 'restarting') {
      this.item.text = '$(sync~spin) gpulens';
      this.item.tooltip =
        'The gpulens language server stopped; it restarts on its own (see the gpulens log).';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      return;
    }
    if (!this.status) {
      this.item.text = '$(loading~spin) gpulens';
      this.item.tooltip = 'gpulens: waiting for the GPU status';
      return;
    }
    const drawn = drawStatusBar(this.status, readSettings().device);
    this.item.text = drawn.text;
    const tooltip = new vscode.MarkdownString(drawn.tooltip, true);
    tooltip.isTrusted = false;
    this.item.tooltip = tooltip;
    if (drawn.warning) {
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    }
  }

  private async pickDevice(): Promise<void> {
    type Item = vscode.QuickPickItem & { device?: string; action?: 'check' };
    const current = readSettings().device;
    const choices = this.status?.devices ?? [];
    const items: Item[] = choices.map((choice) => ({
      label: choice.device === current ? `$(check) ${choice.label}` : choice.label,
      description: choice.description,
      detail: choice.detail,
      device: choice.device,
    }));
    items.push(
      { label: '', kind: vscode.QuickPickItemKind.Separator },
      { label: '$(pulse) Run environment check', description: 'gpulens doctor', action: 'check' },
    );
    const picked = await vscode.window.showQuickPick(items, {
      title: 'gpulens: device the fixes write',
      placeHolder: current ? `now ${current}` : 'choose a device',
    });
    if (!picked) return;
    if (picked.action === 'check') {
      await vscode.commands.executeCommand(ENVIRONMENT_CHECK_COMMAND);
      return;
    }
    if (!picked.device) return;
    try {
      await writeDevice(picked.device);
      // a server that is not running reads the setting when it starts
      if (this.server.runningClient) {
        await this.server.executeServerCommand(SELECT_DEVICE_SERVER_COMMAND, [
          { device: picked.device },
        ]);
      }
    } catch (error) {
      traceError('selecting the device failed', error);
      void vscode.window.showErrorMessage(
        `gpulens: could not select ${picked.device}: ${String(error)}`,
      );
    }
    this.render();
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}

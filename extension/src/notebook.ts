/**
 * Notebooks: "Profile cell on GPU" runs a cell in its own kernel under `%%gpulens` (through the
 * Jupyter extension's kernel API), reads the `application/vnd.gpulens.profile+json` output and
 * draws the costs beside the cell's lines. A `%%gpulens` the user runs by hand is drawn too.
 * Diagnostics and fixes in cells come from the server's notebook sync, not from here.
 */

import * as vscode from 'vscode';
import { parseProfile, PROFILE_MIME, type Profile } from './core/profile';
import { logChannel, traceError, traceInfo } from './logging';
import { profilingAllowed } from './profiler';
import type { ProfileView } from './profileView';

export const PROFILE_NOTEBOOK_CELL_COMMAND = 'gpulens.profileNotebookCell';
const JUPYTER_EXTENSION_ID = 'ms-toolsai.jupyter';
const MAGIC = /^\s*%%gpulens\b/;
const ERROR_MIME = 'application/vnd.code.notebook.error';

/** The part of the Jupyter extension's API this uses (`@vscode/jupyter-extension`). */
interface KernelOutputItem {
  mime: string;
  data: Uint8Array;
}
interface Kernel {
  executeCode(
    code: string,
    token: vscode.CancellationToken,
  ): AsyncIterable<{ items: KernelOutputItem[] } | KernelOutputItem[]>;
}
interface JupyterApi {
  kernels?: { getKernel(uri: vscode.Uri): Thenable<Kernel | undefined> };
}

// another extension's objects: typed as they may come, not as they should
function items(output: { items?: KernelOutputItem[] } | KernelOutputItem[]): KernelOutputItem[] {
  return Array.isArray(output) ? output : (output.items ?? []);
}

async function kernelFor(notebook: vscode.NotebookDocument): Promise<Kernel | string> {
  // an extension may export nothing at all
  const extension = vscode.extensions.getExtension<JupyterApi | undefined>(JUPYTER_EXTENSION_ID);
  if (!extension)
    return 'profiling a notebook cell needs the Jupyter extension (ms-toolsai.jupyter).';
  const api = extension.isActive ? extension.exports : await extension.activate();
  if (!api?.kernels)
    return 'this version of the Jupyter extension offers no kernel API; update it.';
  const kernel = await api.kernels.getKernel(notebook.uri);
  return kernel ?? "start the notebook's kernel first (run any cell), then profile the cell again.";
}

function profileFromItems(found: KernelOutputItem[]): Profile | string {
  const decoder = new TextDecoder();
  const payload = found.find((item) => item.mime === PROFILE_MIME);
  if (!payload) {
    const error = found.find((item) => item.mime === ERROR_MIME);
    if (error) {
      const parsed = JSON.parse(decoder.decode(error.data)) as { name?: string; message?: string };
      return `${parsed.name ?? 'Error'}: ${parsed.message ?? ''}`;
    }
    return "the kernel returned no gpulens profile: is gpulens installed in the kernel's environment?";
  }
  const parsed = parseProfile(JSON.parse(decoder.decode(payload.data)));
  return parsed.ok ? parsed.value : parsed.error;
}

async function execute(
  kernel: Kernel,
  code: string,
  token: vscode.CancellationToken,
): Promise<KernelOutputItem[]> {
  const found: KernelOutputItem[] = [];
  for await (const output of kernel.executeCode(code, token)) found.push(...items(output));
  return found;
}

function cellArgument(arg: unknown): vscode.NotebookCell | undefined {
  if (arg && typeof arg === 'object' && 'notebook' in arg && 'document' in arg)
    return arg as vscode.NotebookCell;
  const editor = vscode.window.activeNotebookEditor;
  const index = editor?.selection.start;
  return editor && index !== undefined && index < editor.notebook.cellCount
    ? editor.notebook.cellAt(index)
    : undefined;
}

/** The payload's message for a run that did not end well, as loud as the payload says. */
export function showRunMessage(profile: Profile): void {
  if (!profile.message) return;
  if (profile.level === 'info') void vscode.window.showInformationMessage(profile.message);
  else if (profile.level === 'error') void vscode.window.showErrorMessage(profile.message);
  else void vscode.window.showWarningMessage(profile.message);
}

export function registerNotebookProfiling(view: ProfileView): vscode.Disposable {
  return vscode.Disposable.from(
    vscode.commands.registerCommand(PROFILE_NOTEBOOK_CELL_COMMAND, async (arg?: unknown) => {
      if (!profilingAllowed()) return;
      const cell = cellArgument(arg);
      if (!cell || cell.kind !== vscode.NotebookCellKind.Code) {
        void vscode.window.showInformationMessage('gpulens: select a code cell to profile.');
        return;
      }
      const kernel = await kernelFor(cell.notebook);
      if (typeof kernel === 'string') {
        void vscode.window.showWarningMessage(`gpulens: ${kernel}`);
        return;
      }
      const source = cell.document.getText();
      const byHand = MAGIC.test(source);
      try {
        const result = await vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: `gpulens: profiling cell ${cell.index + 1} in its kernel…`,
            cancellable: true,
          },
          async (_progress, token) => {
            await execute(kernel, '%load_ext gpulens', token);
            // `--cell`: the kernel knows the run's count, not where the cell stands
            const code = byHand ? source : `%%gpulens --cell ${cell.index + 1}\n${source}`;
            return profileFromItems(await execute(kernel, code, token));
          },
        );
        if (typeof result === 'string') {
          void vscode.window.showWarningMessage(`gpulens: ${result}`);
          return;
        }
        // under an added `%%gpulens` line the payload's line 2 is the cell's line 1
        view.show(cell.document.uri, 'notebook', result, byHand ? 0 : 1);
        if (result.output) logChannel().appendLine(result.output.trimEnd());
        showRunMessage(result);
        vscode.window.setStatusBarMessage(`$(pulse) ${result.summary}`, 8_000);
      } catch (error) {
        if (error instanceof vscode.CancellationError) return;
        traceError('notebook cell profile failed', error);
        void vscode.window.showErrorMessage(`gpulens: profiling the cell failed: ${String(error)}`);
      }
    }),
    // `%%gpulens` run by hand: its output carries the payload; draw it beside the cell's lines
    vscode.workspace.onDidChangeNotebookDocument((event) => {
      for (const change of event.cellChanges) {
        if (!change.outputs || !MAGIC.test(change.cell.document.getText())) continue;
        const item = change.outputs.flatMap((o) => o.items).find((i) => i.mime === PROFILE_MIME);
        if (!item) continue;
        try {
          const parsed = parseProfile(JSON.parse(new TextDecoder().decode(item.data)));
          if (parsed.ok) view.show(change.cell.document.uri, 'notebook', parsed.value, 0);
        } catch (error) {
          traceInfo(`a ${PROFILE_MIME} output could not be read: ${String(error)}`);
        }
      }
    }),
  );
}

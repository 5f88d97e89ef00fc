/**
 * "Profile cell on GPU": runs the active cell in its kernel under `%%gpulens` without touching
 * its source, then draws the payload the magic displays beside the cell's lines.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import { Notification } from '@jupyterlab/apputils';
import type { Cell, CodeCell } from '@jupyterlab/cells';
import type { CodeMirrorEditor } from '@jupyterlab/codemirror';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { OutputArea } from '@jupyterlab/outputarea';

import { type MarkdownRenderer, marksFor, showCosts } from './decorations';
import {
  parseProfile,
  PROFILE_MIME,
  type ProfiledLine,
  profilePayload,
  startsWithMagicLine,
} from './payloads';

const LOAD_EXTENSION = '%load_ext gpulens';

/** Loads the IPython extension in the kernel, quietly: no output, no execution count. */
async function loadExtension(sessionContext: ISessionContext): Promise<string | null> {
  const kernel = sessionContext.session?.kernel;
  if (!kernel) {
    return 'The notebook has no running kernel.';
  }
  const future = kernel.requestExecute({
    code: LOAD_EXTENSION,
    silent: true,
    store_history: false,
    stop_on_error: false,
  });
  const reply = await future.done;
  if (reply.content.status === 'ok') {
    return null;
  }
  if (reply.content.status === 'error') {
    const { ename, evalue } = reply.content;
    return ename === 'ModuleNotFoundError'
      ? "gpulens is not installed in this kernel's environment: pip install gpulens there, then profile again."
      : `The kernel could not load gpulens (${ename}: ${evalue}).`;
  }
  return 'The kernel did not load gpulens (aborted).';
}

/** The profiled lines among a cell's outputs, if the last run displayed a profile. */
export function profileOfCell(cell: CodeCell): ProfiledLine[] | null {
  const outputs = cell.model.outputs;
  for (let i = outputs.length - 1; i >= 0; i--) {
    const data = outputs.get(i).data[PROFILE_MIME];
    const payload = parseProfile(data);
    if (payload) {
      return payload;
    }
  }
  return null;
}

/** The payload of the cell's last profile, as the kernel displayed it, or null. */
export function profilePayloadOfCell(cell: CodeCell): Record<string, unknown> | null {
  const outputs = cell.model.outputs;
  for (let i = outputs.length - 1; i >= 0; i--) {
    const payload = profilePayload(outputs.get(i).data[PROFILE_MIME]);
    if (payload) {
      return payload;
    }
  }
  return null;
}

/** Draws (or clears) the costs of the cell's last profile in its editor. */
export function drawCellProfile(cell: CodeCell, renderMarkdown: MarkdownRenderer): boolean {
  const lines = profileOfCell(cell);
  const editor = cell.editor as CodeMirrorEditor | null;
  if (!editor?.editor) {
    return false;
  }
  const source = cell.model.sharedModel.getSource();
  showCosts(
    editor.editor,
    lines ? marksFor(lines, startsWithMagicLine(source)) : [],
    renderMarkdown,
  );
  return lines !== null;
}

/**
 * Runs `cell` as a normal run would (outputs cleared, prompt shows `[*]`, then the new
 * execution count), with `%%gpulens` as the first line of the code sent, not of the source.
 */
export async function profileCell(
  panel: NotebookPanel,
  cell: CodeCell,
  renderMarkdown: MarkdownRenderer,
): Promise<void> {
  const sessionContext = panel.sessionContext;
  const source = cell.model.sharedModel.getSource();
  if (!source.trim()) {
    return;
  }
  if (!sessionContext.session?.kernel) {
    await sessionContext.ready;
  }
  const problem = await loadExtension(sessionContext);
  if (problem) {
    Notification.error(problem, { autoClose: 8000 });
    return;
  }
  // `--cell`: the kernel knows the run's count, not where the cell stands in the notebook
  const place = panel.content.widgets.indexOf(cell) + 1;
  const code = startsWithMagicLine(source) ? source : `%%gpulens --cell ${place}\n${source}`;
  const model = cell.model;
  showCosts((cell.editor as CodeMirrorEditor).editor, [], renderMarkdown);
  model.sharedModel.transact(() => {
    model.clearExecution();
    cell.outputHidden = false;
  }, false);
  model.executionState = 'running';
  model.trusted = true;
  try {
    const metadata = { ...model.metadata, cellId: model.sharedModel.getId() };
    const reply = await OutputArea.execute(code, cell.outputArea, sessionContext, metadata);
    if (reply) {
      model.executionCount = reply.content.execution_count;
    }
  } catch (error) {
    model.executionState = 'idle';
    throw error;
  } finally {
    if (!cell.isDisposed) {
      drawCellProfile(cell, renderMarkdown);
    }
  }
}

/** Whether a notebook cell is a code cell (its model says so). */
export function isCodeCell(cell: Cell): cell is CodeCell {
  return cell.model.type === 'code';
}

/** The active code cell of the panel, if any. */
export function activeCodeCell(panel: NotebookPanel | null): CodeCell | null {
  const cell = panel?.content.activeCell;
  return cell && isCodeCell(cell) ? cell : null;
}

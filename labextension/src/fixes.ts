/**
 * Quick-fixes and refactors in notebook cells, with or without jupyterlab-lsp: the notebook's
 * code cells go to `POST /gpulens/analyze` shortly after each edit; the answer's findings are
 * drawn in the cells (underline, hover, a bulb on lines with a fix), and its fixes, "Fix all in
 * notebook" and the selection refactors are offered in the bulb's menu and the cell's context
 * menu. Each action is applied as one undoable step per cell. The server words every label.
 * Each cell's last profile (a `%%gpulens` output) goes with its text: the server merges what it
 * measured into the cell's findings, and a new profile asks for the findings again.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { InputDialog, Notification } from '@jupyterlab/apputils';
import type { CodeCell, ICodeCellModel } from '@jupyterlab/cells';
import type { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { URLExt } from '@jupyterlab/coreutils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { EditorView } from '@codemirror/view';
import { Menu } from '@lumino/widgets';

import {
  type ActionsAnswer,
  type ActionsRequest,
  applyEdits,
  type CellChange,
  findingsBetween,
  type FixAction,
  fixesOf,
  parseAnswer,
} from './actions';
import { type FindingMark, type MarkOptions, showFindings } from './findingMarks';
import { profileKey } from './payloads';
import { isCodeCell, profilePayloadOfCell } from './profile';

export const FIX_COMMAND = 'gpulens:apply-fix';
export const FIX_ALL_COMMAND = 'gpulens:fix-all-in-notebook';
export const REFACTOR_COMMAND = 'gpulens:refactor';

/** Context-menu entries for the fixes of one line: a line rarely has more than two. */
const FIX_SLOTS = 6;
/** Quiet time after an edit before the notebook is analysed again. */
const ANALYSE_AFTER_MS = 300;
const EDITOR_SELECTOR = '.jp-Notebook .jp-CodeCell .jp-InputArea-editor';
/** jupyterlab-lsp draws the language server's diagnostics in cells: no second underline. */
const LSP_DIAGNOSTICS_PLUGIN = '@jupyter-lsp/jupyterlab-lsp:diagnostics';
/** Context-menu entries for the selection refactors the answer lists. */
const REFACTOR_SLOTS = 4;

/** The code cells, their texts and their last profiles as one request sent them. */
interface Sent {
  models: ICodeCellModel[];
  texts: string[];
  profiles: (Record<string, unknown> | null)[];
}

type Reply = { answer: ActionsAnswer; sent: Sent } | { error: string };

async function postActions(
  settings: ServerConnection.ISettings,
  body: ActionsRequest,
): Promise<ActionsAnswer | string> {
  const url = URLExt.join(settings.baseUrl, 'gpulens', 'analyze');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      url,
      { method: 'POST', body: JSON.stringify(body) },
      settings,
    );
  } catch (error) {
    return String(error);
  }
  const data: unknown = await response.json().catch(() => null);
  if (!response.ok) {
    const message =
      data && typeof data === 'object' ? (data as { message?: unknown }).message : null;
    return typeof message === 'string' ? message : `${response.status} ${response.statusText}`;
  }
  return parseAnswer(data) ?? `${response.status}: not a gpulens answer`;
}

function undoManagers(panel: NotebookPanel, model: ICodeCellModel): { stopCapturing(): void }[] {
  const managers = [model.sharedModel, panel.model?.sharedModel].map(
    (shared) =>
      (shared as { undoManager?: { stopCapturing(): void } | null } | undefined)?.undoManager,
  );
  return managers.filter((manager): manager is { stopCapturing(): void } => !!manager);
}

/** What the analysis of one notebook knows: the last answer and the texts it answered. */
class NotebookAnalysis {
  answer: ActionsAnswer | null = null;
  sent: Sent | null = null;
  private timer: number | undefined;
  private running = false;
  private again = false;
  private shownProblem: string | null = null;

  constructor(
    readonly panel: NotebookPanel,
    private readonly settings: ServerConnection.ISettings,
    private readonly draw: (analysis: NotebookAnalysis) => void,
  ) {}

  get isPython(): boolean {
    const model = this.panel.model;
    const spec = model?.getMetadata('kernelspec') as { language?: string } | undefined;
    const info = model?.getMetadata('language_info') as { name?: string } | undefined;
    const language = spec?.language ?? info?.name;
    return language === undefined || language.toLowerCase() === 'python';
  }

  codeCells(): CodeCell[] {
    return this.panel.content.widgets.filter(isCodeCell);
  }

  current(): Sent {
    const cells = this.codeCells();
    const models = cells.map((cell) => cell.model);
    return {
      models,
      texts: models.map((model) => model.sharedModel.getSource()),
      profiles: cells.map((cell) => profilePayloadOfCell(cell)),
    };
  }

  /** Whether the answer is about the cells as they are now. */
  closed(): boolean {
    return this.panel.isDisposed;
  }

  isFresh(): boolean {
    if (!this.answer || !this.sent) {
      return false;
    }
    const now = this.current();
    const sent = this.sent;
    return (
      now.models.length === sent.models.length &&
      now.models.every(
        (model, i) =>
          model === sent.models[i] &&
          now.texts[i] === sent.texts[i] &&
          profileKey(now.profiles[i] ?? null) === profileKey(sent.profiles[i] ?? null),
      )
    );
  }

  schedule(): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.refresh(), ANALYSE_AFTER_MS);
  }

  dispose(): void {
    window.clearTimeout(this.timer);
  }

  async refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    if (!this.isPython || this.isFresh() || this.panel.isDisposed) {
      return;
    }
    this.running = true;
    try {
      const reply = await this.request({});
      // the panel may have closed while the request ran
      if ('answer' in reply && !this.closed()) {
        this.answer = reply.answer;
        this.sent = reply.sent;
        this.draw(this);
        const problem = reply.answer.problem;
        if (problem && problem !== this.shownProblem) {
          Notification.warning(problem, { autoClose: 8000 });
        }
        this.shownProblem = problem;
      }
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.again = false;
      await this.refresh();
    }
  }

  /** The cells as they are now, analysed with `extra` (a selection's refactor, fix-all). */
  async request(extra: Omit<ActionsRequest, 'cells'>): Promise<Reply> {
    const sent = this.current();
    const body: ActionsRequest = { cells: sent.texts, path: this.panel.context.path, ...extra };
    if (sent.profiles.some((profile) => profile !== null)) {
      body.profiles = sent.profiles;
    }
    const answer = await postActions(this.settings, body);
    return typeof answer === 'string' ? { error: answer } : { answer, sent };
  }

  /**
   * Applies `changes` to the cells `sent` describes, one undoable step per cell; false (and
   * nothing changed) when a cell no longer holds the text that was analysed.
   */
  apply(sent: Sent, changes: readonly CellChange[]): boolean {
    const targets = changes.map((change) => ({ model: sent.models[change.cell], change }));
    if (
      targets.some(
        ({ model, change }) => !model || model.sharedModel.getSource() !== sent.texts[change.cell],
      )
    ) {
      this.schedule();
      return false;
    }
    for (const { model, change } of targets) {
      if (!model) {
        continue;
      }
      const shared = model.sharedModel;
      const managers = undoManagers(this.panel, model);
      managers.forEach((manager) => {
        manager.stopCapturing();
      });
      shared.transact(() => {
        applyEdits(
          {
            replace: (from, to, insert) => {
              shared.updateSource(from, to, insert);
            },
          },
          change.edits,
        );
      });
      managers.forEach((manager) => {
        manager.stopCapturing();
      });
    }
    return true;
  }
}

/** A line of a code cell that the user pointed at. */
interface LineTarget {
  analysis: NotebookAnalysis;
  cell: number;
  view: EditorView;
  /** 1-based. */
  line: number;
}

function viewOf(cell: CodeCell | undefined): EditorView | null {
  return (cell?.editor as CodeMirrorEditor | null)?.editor ?? null;
}

export function registerFixes(app: JupyterFrontEnd, tracker: INotebookTracker): void {
  const settings = ServerConnection.makeSettings();
  const analyses = new Map<NotebookPanel, NotebookAnalysis>();
  const underline = !app.hasPlugin(LSP_DIAGNOSTICS_PLUGIN);

  function openFixes(
    analysis: NotebookAnalysis,
    cell: number,
    line: number,
    anchor: HTMLElement,
  ): void {
    const menu = new Menu({ commands: app.commands });
    menu.addClass('gpulens-fix-menu');
    const target = { cell, line };
    const view = viewOf(analysis.codeCells()[cell]);
    const count = view && analysis.answer ? fixesAtLine(analysis, cell, view, line).length : 0;
    for (let slot = 0; slot < count; slot++) {
      menu.addItem({ command: FIX_COMMAND, args: { ...target, slot } });
    }
    if (analysis.answer?.fix_all) {
      menu.addItem({ type: 'separator' });
      menu.addItem({ command: FIX_ALL_COMMAND });
    }
    const box = anchor.getBoundingClientRect();
    menu.open(box.left, box.bottom);
  }

  function draw(analysis: NotebookAnalysis): void {
    const answer = analysis.answer;
    if (!answer || !analysis.sent) {
      return;
    }
    analysis.codeCells().forEach((cell, index) => {
      const view = viewOf(cell);
      if (!view || analysis.sent?.models[index] !== cell.model) {
        return;
      }
      const marks: FindingMark[] = (answer.cells[index]?.findings ?? []).map((finding) => ({
        from: finding.from,
        to: finding.to,
        severity: finding.severity,
        hover: finding.hover,
        fixable: finding.fixes.some((fix) => fix.cells.length > 0),
      }));
      const options: MarkOptions = {
        underline,
        bulbTitle: answer.bulb_title,
        openFixes: (line, anchor) => {
          openFixes(analysis, index, line, anchor);
        },
      };
      showFindings(view, marks, options);
    });
  }

  tracker.widgetAdded.connect((_, panel) => {
    const analysis = new NotebookAnalysis(panel, settings, draw);
    analyses.set(panel, analysis);
    void panel.context.ready.then(async () => {
      panel.model?.contentChanged.connect(() => {
        analysis.schedule();
      });
      await panel.revealed;
      await Promise.all(analysis.codeCells().map((cell) => cell.ready));
      await analysis.refresh();
    });
    panel.disposed.connect(() => {
      analysis.dispose();
      analyses.delete(panel);
    });
  });

  function fixesAtLine(
    analysis: NotebookAnalysis,
    cell: number,
    view: EditorView,
    line: number,
  ): FixAction[] {
    if (!analysis.answer || line < 1 || line > view.state.doc.lines) {
      return [];
    }
    const { from, to } = view.state.doc.line(line);
    return fixesOf(findingsBetween(analysis.answer, cell, from, to));
  }

  /** The line the bulb names, else the one right-clicked, else the active cell's cursor line. */
  function lineTarget(args: { cell?: unknown; line?: unknown }): LineTarget | null {
    const panel = tracker.currentWidget;
    const analysis = panel ? analyses.get(panel) : undefined;
    if (!analysis) {
      return null;
    }
    const cells = analysis.codeCells();
    if (typeof args.cell === 'number' && typeof args.line === 'number') {
      const view = viewOf(cells[args.cell]);
      return view ? { analysis, cell: args.cell, view, line: args.line } : null;
    }
    const hit = app.contextMenuHitTest((node) => node.classList.contains('cm-line'));
    const view = hit
      ? EditorView.findFromDOM(hit)
      : viewOf(cells.find((cell) => cell === panel?.content.activeCell));
    if (!view) {
      return null;
    }
    const cell = cells.findIndex((candidate) => viewOf(candidate) === view);
    const position = hit ? view.posAtDOM(hit) : view.state.selection.main.head;
    return cell < 0 ? null : { analysis, cell, view, line: view.state.doc.lineAt(position).number };
  }

  function fixAt(args: {
    cell?: unknown;
    line?: unknown;
    slot?: unknown;
  }): { target: LineTarget; fix: FixAction } | null {
    const target = lineTarget(args);
    if (!target || !target.analysis.isFresh() || typeof args.slot !== 'number') {
      return null;
    }
    const fix = fixesAtLine(target.analysis, target.cell, target.view, target.line)[args.slot];
    return fix ? { target, fix } : null;
  }

  app.commands.addCommand(FIX_COMMAND, {
    label: (args) => fixAt(args)?.fix.label ?? '',
    isVisible: (args) => fixAt(args) !== null,
    execute: (args) => {
      const found = fixAt(args);
      if (found?.target.analysis.sent) {
        found.target.analysis.apply(found.target.analysis.sent, found.fix.cells);
      }
    },
  });

  function currentAnalysis(): NotebookAnalysis | null {
    const panel = tracker.currentWidget;
    return (panel && analyses.get(panel)) ?? null;
  }

  app.commands.addCommand(FIX_ALL_COMMAND, {
    label: () => currentAnalysis()?.answer?.fix_all?.label ?? '',
    isVisible: () => !!currentAnalysis()?.answer?.fix_all,
    execute: async () => {
      const analysis = currentAnalysis();
      if (!analysis) {
        return;
      }
      const reply = await analysis.request({ fix_all: true });
      if ('error' in reply) {
        Notification.error(reply.error, { autoClose: 8000 });
        return;
      }
      const changes = reply.answer.fix_all?.cells ?? [];
      analysis.apply(reply.sent, changes);
    },
  });

  /** The selected text of the cell right-clicked (or the active cell), if any is selected. */
  function selectionTarget(): {
    analysis: NotebookAnalysis;
    cell: number;
    from: number;
    to: number;
  } | null {
    const target = lineTarget({});
    if (!target) {
      return null;
    }
    const { from, to } = target.view.state.selection.main;
    return from === to ? null : { analysis: target.analysis, cell: target.cell, from, to };
  }

  function refactorEntry(args: { slot?: unknown }) {
    const refactors = currentAnalysis()?.answer?.refactors ?? [];
    return typeof args.slot === 'number' ? (refactors[args.slot] ?? null) : null;
  }

  app.commands.addCommand(REFACTOR_COMMAND, {
    label: (args) => refactorEntry(args)?.label ?? '',
    isVisible: (args) => refactorEntry(args) !== null && selectionTarget() !== null,
    execute: async (args) => {
      const entry = refactorEntry(args);
      const target = selectionTarget();
      const answer = target?.analysis.answer;
      if (!entry || !target || !answer) {
        return;
      }
      const request: Omit<ActionsRequest, 'cells'> = {
        selection: { cell: target.cell, from: target.from, to: target.to },
        refactor: entry.id,
      };
      if (entry.asks_device) {
        const chosen = await InputDialog.getText({
          title: entry.label,
          label: answer.device_prompt,
          text: answer.device,
        });
        if (!chosen.button.accept || !chosen.value) {
          return;
        }
        request.device = chosen.value.trim();
      }
      const reply = await target.analysis.request(request);
      if ('error' in reply) {
        Notification.error(reply.error, { autoClose: 8000 });
        return;
      }
      const result = reply.answer.refactor;
      if (result?.message) {
        Notification.info(result.message, { autoClose: 5000 });
      } else if (result) {
        target.analysis.apply(reply.sent, result.cells);
      }
    },
  });

  // first in the cell's context menu, as a group of their own (empty separators collapse)
  let rank = -100;
  const add = (item: Omit<Parameters<typeof app.contextMenu.addItem>[0], 'selector' | 'rank'>) =>
    app.contextMenu.addItem({ ...item, selector: EDITOR_SELECTOR, rank: rank++ });
  for (let slot = 0; slot < FIX_SLOTS; slot++) {
    add({ command: FIX_COMMAND, args: { slot } });
  }
  add({ command: FIX_ALL_COMMAND });
  add({ type: 'separator' });
  for (let slot = 0; slot < REFACTOR_SLOTS; slot++) {
    add({ command: REFACTOR_COMMAND, args: { slot } });
  }
  add({ type: 'separator' });
}

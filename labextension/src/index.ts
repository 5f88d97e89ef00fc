/**
 * gpulens for JupyterLab: wiring only. The status item draws `GET /gpulens/status`; the
 * profile command runs a cell under `%%gpulens` and draws the payload the kernel displays.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon } from '@jupyterlab/ui-components';

import { registerFixes } from './fixes';
import type { MarkdownRenderer } from './decorations';
import { activeCodeCell, drawCellProfile, isCodeCell, profileCell } from './profile';
import { GpuStatusItem } from './status';

export const PROFILE_COMMAND = 'gpulens:profile-cell';

const profileIcon = new LabIcon({
  name: 'gpulens:profile',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 20h18v2H3zM5 10h3v8H5zm5.5-6h3v14h-3zM16 13h3v5h-3z"/></g></svg>',
});

const statusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpulens:status',
  description: 'GPU status in the status bar, from the gpulens server extension.',
  autoStart: true,
  optional: [IStatusBar],
  activate: (_app: JupyterFrontEnd, statusBar: IStatusBar | null) => {
    if (!statusBar) {
      return;
    }
    const item = new GpuStatusItem();
    statusBar.registerStatusItem('gpulens:status', { item, align: 'left', rank: 100 });
  },
};

/** The lab's own Markdown renderer, sanitizing as it does for untrusted output. */
function markdownRenderer(rendermime: IRenderMimeRegistry): MarkdownRenderer {
  return async (markdown, host) => {
    const renderer = rendermime.createRenderer('text/markdown');
    await renderer.renderModel(
      new MimeModel({ data: { 'text/markdown': markdown }, trusted: false }),
    );
    host.replaceChildren(renderer.node);
  };
}

const profilePlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpulens:plugin',
  description: 'Profile a notebook cell on the GPU and draw per-line costs beside its lines.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
  ) => {
    const renderMarkdown = markdownRenderer(rendermime);
    app.commands.addCommand(PROFILE_COMMAND, {
      label: 'Profile cell on GPU',
      caption: 'Run this cell under %%gpulens and show per-line GPU costs beside its lines',
      icon: (args) => (args.toolbar ? profileIcon : undefined),
      isEnabled: () => activeCodeCell(tracker.currentWidget) !== null,
      execute: async () => {
        const panel = tracker.currentWidget;
        const cell = activeCodeCell(panel);
        if (panel && cell) {
          await profileCell(panel, cell, renderMarkdown);
        }
      },
    });
    palette?.addItem({ command: PROFILE_COMMAND, category: 'gpulens' });

    // a cell run with `%%gpulens` typed in it, or a notebook saved with a profile, draws too
    NotebookActions.executed.connect((_, { cell }) => {
      if (isCodeCell(cell)) {
        drawCellProfile(cell, renderMarkdown);
      }
    });
    tracker.widgetAdded.connect((_, panel) => {
      void panel.revealed.then(async () => {
        for (const cell of panel.content.widgets) {
          if (isCodeCell(cell)) {
            await cell.ready;
            drawCellProfile(cell, renderMarkdown);
          }
        }
      });
    });
  },
};

const fixesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'gpulens:fixes',
  description: 'Quick-fixes, "Fix all in notebook" and selection refactors in notebook cells.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    registerFixes(app, tracker);
  },
};

export default [statusPlugin, profilePlugin, fixesPlugin];

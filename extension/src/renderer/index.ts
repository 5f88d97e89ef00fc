/**
 * Notebook renderer for `application/vnd.gpulens.profile+json`: the profile of a `%%gpulens`
 * cell run by hand, drawn from the payload as the server wrote it: header, message, the
 * per-line table (its columns, cells and heat), the legend and the notes.
 */

import type { ActivationFunction } from 'vscode-notebook-renderer';
import { heatAlpha, heatLevel, parseProfile } from '../core/profile';

const STYLE = `
.gpulens-profile table { border-collapse: collapse; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
.gpulens-profile th, .gpulens-profile td { padding: 1px 8px; vertical-align: top; white-space: pre; }
.gpulens-profile .right { text-align: right; }
.gpulens-profile .left { text-align: left; }
.gpulens-profile .summary, .gpulens-profile .warning, .gpulens-profile .note { margin: 4px 0; opacity: 0.85; }
`;

function block(className: string, text: string): HTMLElement {
  return Object.assign(document.createElement('div'), { className, textContent: text });
}

export const activate: ActivationFunction = () => ({
  renderOutputItem(item, element) {
    element.replaceChildren();
    const root = document.createElement('div');
    root.className = 'gpulens-profile';
    const style = document.createElement('style');
    style.textContent = STYLE;
    root.append(style);
    const parsed = parseProfile(item.json());
    if (!parsed.ok) {
      root.append(block('warning', `gpulens: ${parsed.error}`));
      element.append(root);
      return;
    }
    const profile = parsed.value;
    root.append(block('summary', profile.header));
    if (profile.recorded) root.append(block('summary', profile.recorded));
    if (profile.message) root.append(block('warning', profile.message));
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    for (const column of profile.columns) {
      const th = document.createElement('th');
      th.className = column.align;
      th.textContent = column.title;
      head.append(th);
    }
    const body = table.createTBody();
    for (const row of profile.rows) {
      const tr = body.insertRow();
      const alpha = heatAlpha(heatLevel(row.heat));
      if (alpha > 0) tr.style.background = `rgba(255, 90, 31, ${alpha})`;
      row.cells.forEach((text, i) => {
        const td = tr.insertCell();
        td.className = profile.columns[i]?.align ?? 'left';
        td.textContent = text;
      });
    }
    root.append(table);
    if (profile.legend) root.append(block('note', profile.legend));
    for (const note of profile.notes) root.append(block('note', note));
    element.append(root);
  },
});

/**
 * Notebook renderer for `application/vnd.gpulens.profile+json`: the per-line table of a
 * `%%gpulens` cell run by hand, with the same heat scale the editor draws.
 */

import type { ActivationFunction } from 'vscode-notebook-renderer';
import { lineCosts, runMessage, shortSeconds } from '../core/lineFormat';
import { heatAlpha, heatLevel, lineShares, parseProfile, profileSummary } from '../core/profile';

function cell(row: HTMLTableRowElement, text: string, className?: string): void {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
}

const STYLE = `
.gpulens-profile table { border-collapse: collapse; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
.gpulens-profile th, .gpulens-profile td { padding: 1px 8px; text-align: left; vertical-align: top; }
.gpulens-profile td.num { text-align: right; white-space: nowrap; }
.gpulens-profile td.code { white-space: pre; }
.gpulens-profile .summary, .gpulens-profile .warning { margin: 4px 0; opacity: 0.85; }
`;

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
      root.append(Object.assign(document.createElement('div'), { textContent: `gpulens: ${parsed.error}` }));
      element.append(root);
      return;
    }
    const profile = parsed.value;
    root.append(Object.assign(document.createElement('div'), { className: 'summary', textContent: `gpulens profile · ${profileSummary(profile)}` }));
    const message = runMessage(profile);
    if (message) root.append(Object.assign(document.createElement('div'), { className: 'warning', textContent: message }));
    const shares = lineShares(profile);
    const byLine = new Map(profile.lines.map((l) => [l.line, l]));
    const first = profile.firstLine ?? 1;
    const numbers = profile.code.length > 0 ? profile.code.map((_, i) => first + i) : [...byLine.keys()].sort((a, b) => a - b);
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    for (const title of ['line', 'share', 'host', 'costs', 'source']) {
      const th = document.createElement('th');
      th.textContent = title;
      head.append(th);
    }
    const body = table.createTBody();
    for (const number of numbers) {
      const row = body.insertRow();
      const line = byLine.get(number);
      const share = line ? shares.get(number) ?? 0 : 0;
      const alpha = heatAlpha(heatLevel(share));
      if (alpha > 0) row.style.background = `rgba(255, 90, 31, ${alpha})`;
      cell(row, String(number), 'num');
      cell(row, line ? `${Math.round(share * 100)}%` : '', 'num');
      cell(row, line ? shortSeconds(line.hostS) : '', 'num');
      cell(row, line ? lineCosts(line) : '');
      cell(row, (profile.code[number - first] ?? '').replace(/\n$/, ''), 'code');
    }
    root.append(table);
    for (const warning of profile.warnings) {
      root.append(Object.assign(document.createElement('div'), { className: 'warning', textContent: warning }));
    }
    element.append(root);
  },
});

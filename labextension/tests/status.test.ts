import { describe, expect, it } from 'vitest';

import { explainStatusError, History, parseStatus, sparklinePoints } from '../src/payloads';
import { drawsField, fields, payload, payloads, type Json } from './payloads';

describe('every status payload the server makes, as the lab draws it', () => {
  const all = payloads('status');

  it('has the machines and cases the lab must draw', () => {
    const names = all.map(([name]) => name);
    for (const name of [
      'status-cpu-only',
      'status-h200x2',
      'status-h200x2-hidden',
      'status-lost',
      'status-pending',
    ]) {
      expect(names).toContain(name);
    }
  });

  it.each(all)("%s: the item and every line of its popup are the server's", (_name, raw: Json) => {
    const view = parseStatus(raw)!;
    const display = raw.display;
    expect([view.text, view.title, view.heading, view.reason, view.facts]).toEqual([
      display.text,
      display.title,
      display.heading,
      display.reason,
      display.facts,
    ]);
    expect(view.gpus).toEqual(
      display.gpus.map((gpu: Json) => ({
        index: gpu.index,
        heading: gpu.heading,
        line: gpu.line,
        processes: gpu.processes,
        processesNote: gpu.processes_note,
      })),
    );
    expect(view.history).toEqual(display.history);
    expect([view.frameworksHeading, view.frameworks]).toEqual([
      display.frameworks.heading,
      display.frameworks.lines,
    ]);
  });

  it.each(all)("%s: the charts sample each GPU's numbers", (_name, raw: Json) => {
    const view = parseStatus(raw)!;
    expect([...view.samples.keys()]).toEqual(raw.gpus.map((gpu: Json) => gpu.index));
    for (const gpu of raw.gpus) {
      const sample = view.samples.get(gpu.index)!;
      expect(sample.utilization).toBe(gpu.utilization_pct ?? 0);
      expect(sample.memory).toBeCloseTo(
        (100 * (gpu.memory_used_bytes ?? 0)) / gpu.memory_total_bytes,
        9,
      );
    }
  });
});

/** Fields of the display block that VS Code's status bar item draws: its codicon, its warning
 * colour, its Markdown tooltip and its device picker; the lab's popup shows the same facts
 * as lines. */
const VSCODE_ITEM_FIELDS = ['icon', 'warning', 'tooltip', 'devices'];

/** What the status item and its popup show of a payload (the charts' samples are the
 * payload's figures, not its display block). */
function drawing(raw: Json): string {
  const view = parseStatus(raw)!;
  return JSON.stringify({ ...view, samples: [...view.samples] });
}

describe('every display field the server writes is drawn, or left to VS Code by name', () => {
  const drawn = fields('status').filter(
    ([, all]) => !VSCODE_ITEM_FIELDS.includes(String(all[0]!.path[1])),
  );

  it.each(drawn)('%s', (_name, all) => {
    for (const field of all) expect(drawsField(drawing, field), field.payload).toBe(true);
  });

  it('knows each field it leaves to VS Code', () => {
    const names = new Set(fields('status').map(([, all]) => String(all[0]!.path[1])));
    for (const name of VSCODE_ITEM_FIELDS) expect(names).toContain(name);
  });
});

describe('reading', () => {
  const status = payload('status-h200x2');

  it('ignores fields it does not know', () => {
    const raw = { ...status, brand_new: [1], display: { ...status.display, also_new: true } };
    expect(parseStatus(raw)!.text).toBe(status.display.text);
  });

  it('rejects what is not a status payload it reads', () => {
    expect(parseStatus({ ...status, schema: 'gpulens.status/1' })).toBeNull();
    expect(parseStatus({ schema: 'gpulens.profile/2' })).toBeNull();
    expect(parseStatus(null)).toBeNull();
    expect(parseStatus([1])).toBeNull();
    expect(parseStatus({ ...status, schema: 'gpulens.status/2.1' })).not.toBeNull();
  });

  it('explains route errors instead of going blank', () => {
    expect(explainStatusError(404).text).toMatch(/server extension missing/);
    expect(explainStatusError(404).title).toMatch(
      /jupyter server extension enable gpulens.jupyter/,
    );
    expect(explainStatusError(403).text).toMatch(/not authorized/);
    expect(explainStatusError(null).text).toMatch(/unreachable/);
    expect(explainStatusError(500).text).toMatch(/500/);
  });
});

describe('history', () => {
  it('draws a sparkline in its box, clamped', () => {
    expect(sparklinePoints([0, 50, 200], 100, 10, 100)).toBe('0,10 50,5 100,0');
    expect(sparklinePoints([33], 120, 24, 100)).toBe('120,16.1');
    expect(sparklinePoints([], 100, 10, 100)).toBe('');
  });

  it('keeps a bounded history', () => {
    const history = new History(3);
    for (const value of [1, 2, 3, 4, 5]) {
      history.push(value);
    }
    expect(history.values()).toEqual([3, 4, 5]);
  });
});

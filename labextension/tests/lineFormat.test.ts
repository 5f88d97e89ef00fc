import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseProfile } from '../src/format';
import {
  type Block,
  inlineText,
  KERNEL_NAME_CHARS,
  lineCosts,
  lineDetails,
  markdownBlocks,
  pyFixed,
  shortBytes,
  shortCount,
  shortSeconds
} from '../src/lineFormat';

interface Case {
  payload: Record<string, unknown>;
  costs: string[];
  details: string[];
}

// written by extension/test/unit/fixtures/make_line_format.py from gpulens.profiler.report: the
// Python side's own strings, the ones the VS Code client is held to as well
const FIXTURE = join(__dirname, '..', '..', 'extension', 'test', 'unit', 'fixtures', 'line-format.json');
const cases = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Case[];

function rawLines(c: Case): Array<Record<string, unknown>> {
  return c.payload.lines as Array<Record<string, unknown>>;
}

describe('the lab draws a line as gpulens.profiler.report words it', () => {
  it('has recorded GPU lines, copies both ways, host-only lines and hints to compare with', () => {
    const costs = cases.flatMap(c => c.costs);
    expect(cases.length).toBeGreaterThanOrEqual(8);
    for (const part of ['k kernels', '↑', '↓', '↔', 'memset', '⏸', ' hits · ']) {
      expect(costs.some(text => text.includes(part))).toBe(true);
    }
    expect(cases.flatMap(c => c.details).some(text => text.includes('💡'))).toBe(true);
  });

  cases.forEach((c, index) => {
    const payload = parseProfile(c.payload)!;
    const source = (c.payload.source as { path?: string } | undefined)?.path ?? 'a notebook cell';
    it(`case ${index} (${source}): the label and the hover's Markdown of every line`, () => {
      expect(payload.lines.map(lineCosts)).toEqual(c.costs);
      expect(payload.lines.map(line => lineDetails(line, c.payload.backend as string | undefined))).toEqual(c.details);
      expect(payload.lines.map(line => lineDetails(line, payload.backend))).toEqual(c.details);
    });

    it(`case ${index} (${source}): the hover's blocks read as the Markdown renders`, () => {
      payload.lines.forEach((line, i) => {
        const blocks = markdownBlocks(c.details[i]!);
        const raw = rawLines(c)[i]!;
        const head = blocks[0] as Extract<Block, { kind: 'paragraph' }>;
        expect(head.content[0]).toEqual({ text: 'gpulens profile', strong: true });
        expect(inlineText(head.content)).toBe(`gpulens profile · line ${line.line} · ${c.payload.backend} backend`);
        // the list items are the Markdown's "- " rows, as written (they hold no markup)
        const list = blocks.find(b => b.kind === 'list') as Extract<Block, { kind: 'list' }>;
        const items = c.details[i]!.split('\n').filter(row => row.startsWith('- '));
        expect(list.items.map(inlineText)).toEqual(items.map(row => row.slice(2)));
        // the table: one row per top kernel, its name a code span, cut and without `|`
        const table = blocks.find(b => b.kind === 'table');
        const top = line.kernels.top;
        if (top.length === 0) {
          expect(table).toBeUndefined();
        } else {
          expect(table?.kind).toBe('table');
          if (table?.kind !== 'table') return;
          expect(table.head.map(inlineText)).toEqual(['top kernels', 'launches', 'GPU time']);
          expect(table.align).toEqual([null, 'right', 'right']);
          expect(table.rows.map(row => row[0]![0])).toEqual(
            top.map(k => {
              const chars = [...k.name];
              const cut = chars.length > KERNEL_NAME_CHARS ? `${chars.slice(0, KERNEL_NAME_CHARS - 1).join('')}…` : k.name;
              return { text: cut.replace(/`/g, "'").replace(/\|/g, '¦'), code: true };
            })
          );
          expect(table.rows.map(row => inlineText(row[1]!))).toEqual(top.map(k => shortCount(k.count)));
          expect(table.rows.map(row => inlineText(row[2]!))).toEqual(top.map(k => shortSeconds(k.gpu_s)));
        }
        // hints read as the payload says them: the Markdown escapes are gone
        const hints = ((raw.hints as Array<{ message: string }> | undefined) ?? []).map(h => `💡 ${h.message}`);
        const paragraphs = blocks.filter(b => b.kind === 'paragraph').slice(1) as Array<Extract<Block, { kind: 'paragraph' }>>;
        expect(paragraphs.map(p => inlineText(p.content))).toEqual(hints);
        expect(blocks.length).toBe(2 + (top.length ? 1 : 0) + hints.length);
      });
    });
  });

  it('keeps two figures the way Python rounds them', () => {
    expect([0, 2.2e-6, 0.0087, 0.062, 0.9996, 75].map(shortSeconds)).toEqual(['0 ms', '2.2 µs', '8.7 ms', '62 ms', '1.0 s', '75 s']);
    expect([1, 999, 1000, 1400, 12_345, 999_600].map(shortCount)).toEqual(['1', '999', '1k', '1.4k', '12k', '1M']);
    expect([4, 4096, 400e6, 1.2e9].map(shortBytes)).toEqual(['4 B', '4.1 KB', '400 MB', '1.2 GB']);
    // Python rounds an exact tie to even, toFixed away from zero; a near tie goes by its
    // binary value in both (4.35 is 4.34999…: Python says "4.3")
    expect(pyFixed(12.5, 0)).toBe('12');
    expect(pyFixed(13.5, 0)).toBe('14');
    expect(pyFixed(0.25, 1)).toBe('0.2');
    expect(pyFixed(0.75, 1)).toBe('0.8');
    expect(pyFixed(4.35, 1)).toBe('4.3');
    expect(pyFixed(0.35, 1)).toBe('0.3');
    expect(pyFixed(2.675, 2)).toBe('2.67');
    expect(shortBytes(4350)).toBe('4.3 KB');
    expect(shortCount(12_500)).toBe('12k');
  });
});

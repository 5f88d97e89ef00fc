import { describe, expect, it } from 'vitest';

import { marksFor } from '../src/decorations';
import {
  editorLine,
  parseProfile,
  profileKey,
  profilePayload,
  startsWithMagicLine,
} from '../src/payloads';
import { drawsField, fields, payload, payloads, type Json } from './payloads';

describe('every profile payload the server makes, as the lab draws it', () => {
  const all = payloads('profile');

  it('has recorded GPU captures, notebook payloads, a host run and failed runs', () => {
    const names = all.map(([name]) => name);
    expect(names.filter((name) => name.startsWith('profile-recorded-')).length).toBeGreaterThan(0);
    for (const name of [
      'profile-notebook-train_step',
      'profile-host',
      'profile-synthetic',
      'profile-failed-Timeout',
    ]) {
      expect(names).toContain(name);
    }
  });

  it.each(all)('%s: every line is drawn with its label, hover and heat', (_name, raw: Json) => {
    const marks = marksFor(parseProfile(raw)!, true);
    expect(marks).toEqual(
      raw.lines.map((line: Json) => ({
        line: line.line,
        hits: line.hits,
        heat: line.heat,
        label: line.label,
        hover: line.hover,
      })),
    );
  });
});

/** The run's words and table: the cell's output shows them, as the HTML and text the magic
 * displays beside the payload (Python renders both from the same display block). */
const CELL_OUTPUT_FIELDS = ['display'];

describe('every field the server writes for drawing is drawn, or left to the cell output', () => {
  const drawn = fields('profile').filter(
    ([, all]) => !CELL_OUTPUT_FIELDS.includes(String(all[0]!.path[0])),
  );

  it('draws something at the lines', () => {
    expect(drawn.map(([name]) => name)).toContain('lines.[].label');
  });

  it.each(drawn)('%s', (_name, all) => {
    const draw = (data: Json): string => JSON.stringify(marksFor(parseProfile(data)!, true));
    for (const field of all) expect(drawsField(draw, field), field.payload).toBe(true);
  });
});

describe('reading', () => {
  const notebook = payload('profile-notebook-train_step');

  it('maps payload lines to editor lines, with and without a %%gpulens line in the source', () => {
    expect(editorLine(2, false)).toBe(1);
    expect(editorLine(2, true)).toBe(2);
    expect(marksFor(parseProfile(notebook)!, false).map((mark) => mark.line)).toEqual(
      notebook.lines.map((line: Json) => line.line - 1),
    );
    expect(startsWithMagicLine('%%gpulens --backend host\nx = 1')).toBe(true);
    expect(startsWithMagicLine('x = 1\n%%gpulens')).toBe(false);
    expect(startsWithMagicLine('%%gpulensx')).toBe(false);
  });

  it('keeps working when fields are added, dropped or of the wrong type', () => {
    const lines = parseProfile({
      ...notebook,
      more: true,
      lines: [
        { ...notebook.lines[0], brand_new: { x: 1 }, heat: 7 },
        { label: 'no line' },
        'not a line',
        { line: 3, label: 4 },
      ],
    })!;
    expect(lines.map((line) => [line.line, line.label, line.heat])).toEqual([
      [notebook.lines[0].line, notebook.lines[0].label, 1],
      [3, '', 0],
    ]);
  });

  it('rejects what is not a profile payload it reads', () => {
    expect(parseProfile({ ...notebook, schema: 'gpulens.profile/1' })).toBeNull();
    expect(parseProfile({ schema: 'gpulens.status/2', lines: [] })).toBeNull();
    expect(parseProfile('gpulens.profile/2')).toBeNull();
  });
});

describe("handing a cell's last profile back to the server", () => {
  const notebook = payload('profile-notebook-train_step');

  it('sends the payload as the kernel displayed it, and nothing that is not one', () => {
    expect(profilePayload(notebook)).toBe(notebook);
    expect(profilePayload({ ...notebook, schema: 'gpulens.profile/1' })).toBeNull();
    expect(profilePayload({ schema: 'gpulens.status/2' })).toBeNull();
    expect(profilePayload(null)).toBeNull();
  });

  it('tells a new profile of the cell from the one sent', () => {
    const again = { ...notebook, time: '2030-01-01T00:00:00+00:00' };
    expect(profileKey(notebook)).toBe(profileKey(structuredClone(notebook)));
    expect(profileKey(again)).not.toBe(profileKey(notebook));
    expect(profileKey({ ...notebook, wall_s: 1234.5 })).not.toBe(profileKey(notebook));
    expect(profileKey(null)).toBe('');
  });
});

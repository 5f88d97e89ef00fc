import { describe, expect, it } from 'vitest';
import {
  HEAT_LEVELS,
  editorLine,
  heatAlpha,
  heatLevel,
  lineMarks,
  parseProfile,
  type Profile,
} from '../../src/core/profile';
import { drawsField, fields, payload, payloads, type Json } from './payloads';

function parsed(raw: unknown): Profile {
  const result = parseProfile(raw);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe('every profile payload the server makes, as the editor draws it', () => {
  const all = payloads('profile');

  it('has recorded GPU captures, notebook payloads, a host run and failed runs', () => {
    const names = all.map(([name]) => name);
    expect(names.filter((n) => n.startsWith('profile-recorded-')).length).toBeGreaterThan(0);
    for (const name of [
      'profile-train_step',
      'profile-notebook-train_step',
      'profile-host',
      'profile-failed-Timeout',
    ]) {
      expect(names).toContain(name);
    }
  });

  it.each(all)('%s: each line drawn with its label, hover and heat', (_name, raw: Json) => {
    const marks = lineMarks(parsed(raw), 0, Number.MAX_SAFE_INTEGER);
    expect(marks.map((m) => [m.at + 1, m.label, m.hover, m.heat])).toEqual(
      raw.lines.map((line: Json) => [line.line, line.label, line.hover, line.heat]),
    );
    for (const mark of marks) expect(mark.level).toBe(heatLevel(mark.heat));
  });

  it.each(all)("%s: the run's words and table as the server wrote them", (_name, raw: Json) => {
    const profile = parsed(raw);
    const display = raw.display;
    expect(profile.header).toBe(display.header);
    expect(profile.summary).toBe(display.summary);
    expect(profile.recorded).toBe(display.recorded ?? undefined);
    expect(profile.message).toBe(display.message ?? undefined);
    expect(profile.level).toBe(display.level ?? undefined);
    expect(profile.notes).toEqual(display.notes);
    expect(profile.columns).toEqual(display.table.columns);
    expect(profile.rows).toEqual(display.table.rows);
    expect(profile.legend).toBe(display.table.legend);
  });
});

/** Everything the editor shows of a payload: the marks at its lines, the run's words, its table. */
function drawing(raw: Json): string {
  const profile = parsed(raw);
  return JSON.stringify([profile, lineMarks(profile, 0, Number.MAX_SAFE_INTEGER)]);
}

describe('every field the server writes for drawing is drawn', () => {
  it.each(fields('profile'))('%s', (_name, all) => {
    for (const field of all) expect(drawsField(drawing, field), field.payload).toBe(true);
  });
});

describe('drawing', () => {
  it('tints the hottest line fully and a cold line not at all', () => {
    const profile = parsed(payload('profile-train_step'));
    const levels = lineMarks(profile, 0, 1000).map((m) => m.level);
    expect(Math.max(...levels)).toBe(HEAT_LEVELS);
    expect(Math.min(...levels)).toBe(0);
  });

  it('has a heat scale from none to strong, and any heat is visible', () => {
    expect([0, Number.NaN, 0.0001, 0.5, 1, 3].map(heatLevel)).toEqual([
      0,
      0,
      1,
      HEAT_LEVELS / 2,
      HEAT_LEVELS,
      HEAT_LEVELS,
    ]);
    expect(heatAlpha(0)).toBe(0);
    for (let level = 1; level < HEAT_LEVELS; level += 1)
      expect(heatAlpha(level + 1)).toBeGreaterThan(heatAlpha(level));
    expect(heatAlpha(HEAT_LEVELS)).toBeLessThanOrEqual(0.5);
  });

  it('maps payload lines onto the editor, under an added %%gpulens line too, and drops lines outside it', () => {
    expect(editorLine(9, 0)).toBe(8);
    expect(editorLine(2, 1)).toBe(0);
    const notebook = parsed(payload('profile-notebook-train_step'));
    const marks = lineMarks(notebook, 1, 3);
    expect(marks.map((m) => m.at)).toEqual([0, 1, 2]);
    expect(marks[0].label).toBe(notebook.lines[0].label);
  });
});

describe('parsing', () => {
  const train = payload('profile-train_step');

  it('ignores fields it does not know and drops lines without a number', () => {
    const raw = {
      ...train,
      brand_new: 1,
      lines: [{ ...train.lines[0], extra: {} }, { label: 'no line' }, 'junk'],
    };
    expect(parsed(raw).lines).toHaveLength(1);
  });

  it('reads a failed run: no lines, its message and how loud it is', () => {
    const failed = parsed(payload('profile-failed-ZeroDivisionError'));
    expect(failed.lines).toEqual([]);
    expect(failed.level).toBe('error');
    expect(failed.message).toContain('ZeroDivisionError');
    expect(failed.error).toEqual({ type: 'ZeroDivisionError' });
  });

  it('refuses another major schema and what is not an object', () => {
    expect(parseProfile({ ...train, schema: 'gpulens.profile/1' }).ok).toBe(false);
    expect(parseProfile({ ...train, schema: 'gpulens.profile/2.1' }).ok).toBe(true);
    expect(parseProfile('x').ok).toBe(false);
  });
});

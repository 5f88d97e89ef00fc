import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  deviceSeconds,
  editorLine,
  HEAT_LEVELS,
  heatAlpha,
  heatBasis,
  heatLevel,
  lineShares,
  profileSummary,
  parseProfile,
  type Profile,
} from '../../src/core/profile';

const fixture = (name: string): unknown => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));

function parsed(raw: unknown): Profile {
  const result = parseProfile(raw);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe('heat scale', () => {
  it('is 0 for no time and rounds any cost up to a visible level', () => {
    expect(heatLevel(0)).toBe(0);
    expect(heatLevel(Number.NaN)).toBe(0);
    expect(heatLevel(0.0001)).toBe(1);
    expect(heatLevel(0.5)).toBe(HEAT_LEVELS / 2);
    expect(heatLevel(1)).toBe(HEAT_LEVELS);
    expect(heatLevel(3)).toBe(HEAT_LEVELS);
  });

  it('gets stronger with the level', () => {
    expect(heatAlpha(0)).toBe(0);
    for (let level = 1; level < HEAT_LEVELS; level += 1) expect(heatAlpha(level + 1)).toBeGreaterThan(heatAlpha(level));
    expect(heatAlpha(HEAT_LEVELS)).toBeLessThanOrEqual(0.5);
  });

  it('scales GPU cells by GPU time: the forward and backward lines are hottest', () => {
    const profile = parsed(fixture('profile-train_step.json'));
    expect(heatBasis(profile)).toBe('gpu');
    const shares = lineShares(profile);
    const sum = [...shares.values()].reduce((a, b) => a + b, 0);
    expect(sum).toBeCloseTo(1, 6);
    expect(shares.get(1)).toBe(0);
    expect(Math.max(...shares.values())).toBe(shares.get(3));
    expect(shares.get(4)).toBeGreaterThan(0.3);
  });

  it('counts copies as GPU time', () => {
    const profile = parsed(fixture('profile-big_copies.json'));
    expect(heatBasis(profile)).toBe('gpu');
    expect(profile.lines.some((l) => deviceSeconds(l) > 0 && l.kernelCount === 0)).toBe(true);
  });

  it('falls back to host time for a cell that used no GPU', () => {
    const profile = parsed(fixture('profile-host.json'));
    expect(profile.backend).toBe('host');
    expect(heatBasis(profile)).toBe('host');
    const shares = lineShares(profile);
    const hottest = [...shares.entries()].sort((a, b) => b[1] - a[1])[0][0];
    expect([10, 11]).toContain(hottest);
  });
});

describe('parsing', () => {
  it('ignores unknown fields (the fixtures carry one) and keeps the lines', () => {
    const profile = parsed(fixture('profile-train_step.json'));
    expect(profile.lines.map((l) => l.line)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(profile.backend).toBe('cupti');
  });

  it('reads a payload with missing blocks as zeros', () => {
    const profile = parsed({ schema: 'gpulens.profile/1', lines: [{ line: 3, hits: 2 }, { hits: 1 }, 'junk'] });
    expect(profile.lines).toHaveLength(1);
    expect(profile.lines[0].kernelCount).toBe(0);
    expect(deviceSeconds(profile.lines[0])).toBe(0);
    expect(profile.gpuNames).toEqual([]);
    expect(lineShares(profile).get(3)).toBe(0);
  });

  it('reads a failed run: error object, no lines', () => {
    const profile = parsed({ schema: 'gpulens.profile/1', backend: 'none', lines: [], error: { type: 'TimeoutError', message: 'stopped after 5 s', line: null } });
    expect(profile.error).toEqual({ type: 'TimeoutError', message: 'stopped after 5 s', line: undefined });
  });

  it('refuses another major schema', () => {
    expect(parseProfile({ schema: 'gpulens.profile/2' }).ok).toBe(false);
    expect(parseProfile('x').ok).toBe(false);
  });

  it('sums up a run in one line', () => {
    expect(profileSummary(parsed(fixture('profile-train_step.json')))).toMatch(/^cell: \S+ (ms|s) wall · \S+ (ms|µs) on the GPU · backend cupti$/);
  });

  it('maps payload lines onto editor lines, with the added %%gpulens line', () => {
    expect(editorLine(9, 0)).toBe(8);
    expect(editorLine(2, 1)).toBe(0);
  });
});

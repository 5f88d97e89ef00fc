import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  deviceSeconds,
  editorLine,
  formatBytes,
  formatSeconds,
  HEAT_LEVELS,
  heatAlpha,
  heatBasis,
  heatLevel,
  lineHover,
  lineLabel,
  lineShares,
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

describe('labels and hovers', () => {
  it('labels a GPU line with kernels and its share', () => {
    const profile = parsed(fixture('profile-train_step.json'));
    const line = profile.lines.find((l) => l.line === 4);
    if (!line) throw new Error('line 4 missing');
    const label = lineLabel(line, 0.42, 'gpu');
    expect(label).toMatch(/^42% · 240 kernels \d/);
    expect(label).not.toContain('host');
  });

  it('labels a host line with its host time and runs', () => {
    const profile = parsed(fixture('profile-host.json'));
    const line = profile.lines.find((l) => l.line === 11);
    if (!line) throw new Error('line 11 missing');
    expect(lineLabel(line, 0.6, 'host')).toMatch(/^60% · host \d+(\.\d)? ms · ×60,000$/);
  });

  it('shows copies with direction, size and pageable memory', () => {
    const profile = parsed(fixture('profile-big_copies.json'));
    const labels = profile.lines.map((l) => lineLabel(l, 0.1, 'gpu')).join('\n');
    expect(labels).toMatch(/H→D 400\.0 MB \d+ ms pageable/);
    expect(labels).toMatch(/D→H 400\.0 MB/);
  });

  it('puts the top kernels and the hints in the hover', () => {
    const profile = parsed(fixture('profile-train_step.json'));
    const line = profile.lines.find((l) => l.line === 6);
    if (!line) throw new Error('line 6 missing');
    const hover = lineHover(line, 0, profile);
    expect(hover).toContain('syncs: 20');
    expect(hover).toContain('GPU001');
    const forward = profile.lines.find((l) => l.line === 3);
    if (!forward) throw new Error('line 3 missing');
    expect(lineHover(forward, 0.5, profile)).toMatch(/\| top kernels \| calls \| GPU time \|[\s\S]*\| `[^`]+` \| \d+ \|/);
  });

  it('formats durations and sizes', () => {
    expect(formatSeconds(0)).toBe('0');
    expect(formatSeconds(2.2e-6)).toBe('2 µs');
    expect(formatSeconds(0.0087)).toBe('8.7 ms');
    expect(formatSeconds(0.21)).toBe('210 ms');
    expect(formatSeconds(1.5)).toBe('1.50 s');
    expect(formatBytes(4)).toBe('4 B');
    expect(formatBytes(400_000_000)).toBe('400.0 MB');
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

  it('maps payload lines onto editor lines, with the added %%gpulens line', () => {
    expect(editorLine(9, 0)).toBe(8);
    expect(editorLine(2, 1)).toBe(0);
  });
});

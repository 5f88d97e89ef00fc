import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lineCosts, lineDetails, pyFixed, runMessage, shortBytes, shortCount, shortSeconds } from '../../src/core/lineFormat';
import { parseProfile, type Profile } from '../../src/core/profile';

interface Case {
  payload: unknown;
  costs: string[];
  details: string[];
  message: string | null;
}

// written by make_line_format.py from gpulens.profiler.report: the Python side's own strings
const cases = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'line-format.json'), 'utf8')) as Case[];

function parsed(raw: unknown): Profile {
  const result = parseProfile(raw);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe('the line format mirrors gpulens.profiler.report', () => {
  it('has recorded GPU cases and failed runs to compare with', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
    expect(cases.some((c) => c.costs.some((t) => t.includes('kernels')))).toBe(true);
    expect(cases.some((c) => c.costs.some((t) => t.includes('↑')))).toBe(true);
  });

  cases.forEach((c, index) => {
    const profile = parsed(c.payload);
    it(`case ${index} (${profile.path ?? '?'}): costs, hovers and run message`, () => {
      expect(profile.lines.map(lineCosts)).toEqual(c.costs);
      expect(profile.lines.map((line) => lineDetails(line, profile.backend))).toEqual(c.details);
      expect(runMessage(profile) ?? null).toBe(c.message);
    });
  });

  it('keeps two figures the way Python rounds them', () => {
    expect([0, 2.2e-6, 0.0087, 0.062, 0.9996, 75].map(shortSeconds)).toEqual(['0 ms', '2.2 µs', '8.7 ms', '62 ms', '1.0 s', '75 s']);
    expect([1, 999, 1000, 1400, 12_345, 999_600].map(shortCount)).toEqual(['1', '999', '1k', '1.4k', '12k', '1M']);
    expect([4, 4096, 400e6, 1.2e9].map(shortBytes)).toEqual(['4 B', '4.1 KB', '400 MB', '1.2 GB']);
    // Python rounds an exact tie to even; toFixed would round it up
    expect(pyFixed(12.5, 0)).toBe('12');
    expect(pyFixed(13.5, 0)).toBe('14');
    expect(pyFixed(0.25, 1)).toBe('0.2');
    expect(shortCount(12_500)).toBe('12k');
  });
});

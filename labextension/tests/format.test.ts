import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  CPU_ONLY,
  editorLine,
  explainStatusError,
  formatMemory,
  formatStatusText,
  heatByLine,
  History,
  parseProfile,
  parseStatus,
  shortGpuName,
  sparklinePoints,
  startsWithMagicLine
} from '../src/format';
import { lineCosts, lineDetails } from '../src/lineFormat';

const GIB = 1024 ** 3;

function gpu(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    index: 0,
    uuid: 'GPU-1',
    name: 'NVIDIA H100 80GB HBM3',
    utilization_pct: 37,
    memory_used_bytes: 12.3 * GIB,
    memory_total_bytes: 79.6 * GIB,
    temperature_c: 45,
    power_w: 72.5,
    power_limit_w: 700,
    sm_clock_mhz: 1980,
    visible: true,
    processes: [{ pid: 7, name: 'python', used_memory_bytes: GIB }],
    ...extra
  };
}

function status(gpus: unknown[], extra: Record<string, unknown> = {}): unknown {
  return { schema: 'gpulens.status/1', time: 'now', available: gpus.length > 0, reason: null, gpus, frameworks: {}, ...extra };
}

describe('status', () => {
  it('reads as the issue shows it', () => {
    expect(formatStatusText(parseStatus(status([gpu()]))!)).toBe('H100 · 37% · 12.3/80 GB · 45°C');
  });

  it('says CPU only when no GPU is usable, keeping the reason', () => {
    const parsed = parseStatus(
      status([], { available: false, reason: 'No NVIDIA driver found', frameworks_state: 'ready' })
    )!;
    expect(formatStatusText(parsed)).toBe(CPU_ONLY);
    expect(parsed.reason).toBe('No NVIDIA driver found');
  });

  it('sums several GPUs of one kind and shows the hottest', () => {
    const parsed = parseStatus(status([gpu(), gpu({ index: 1, utilization_pct: 63, temperature_c: 51 })]))!;
    expect(formatStatusText(parsed)).toBe('2× H100 · 50% · 24.6/159 GB · 51°C');
  });

  it('leaves out GPUs hidden by CUDA_VISIBLE_DEVICES', () => {
    const parsed = parseStatus(status([gpu(), gpu({ index: 1, visible: false, name: 'NVIDIA A100-SXM4-80GB' })]))!;
    expect(formatStatusText(parsed)).toBe('H100 · 37% · 12.3/80 GB · 45°C');
  });

  it('tolerates unknown and missing fields', () => {
    const parsed = parseStatus(
      status([{ index: 0, name: 'NVIDIA L4', future_field: { a: 1 }, processes: [{ pid: 1, kernel: { id: 'k1', name: 'python3' } }] }], {
        schema: 'gpulens.status/2',
        new_section: [1, 2]
      })
    )!;
    expect(formatStatusText(parsed)).toBe('L4 · ? GB');
    expect(parsed.gpus[0]!.processes[0]!.kernel).toEqual({ id: 'k1', name: 'python3' });
  });

  it('rejects what is not a status payload', () => {
    expect(parseStatus({ schema: 'gpulens.profile/1' })).toBeNull();
    expect(parseStatus(null)).toBeNull();
    expect(parseStatus([1])).toBeNull();
  });

  it('shortens GPU names', () => {
    expect(shortGpuName('NVIDIA GeForce RTX 4090')).toBe('RTX 4090');
    expect(shortGpuName('NVIDIA A100-SXM4-80GB')).toBe('A100');
    expect(shortGpuName('NVIDIA H200')).toBe('H200');
    expect(shortGpuName('Tesla T4')).toBe('T4');
  });

  it('formats memory', () => {
    expect(formatMemory(0, 8 * GIB)).toBe('0.0/8.0 GB');
    expect(formatMemory(null, null)).toBe('? GB');
  });

  it('explains route errors instead of going blank', () => {
    expect(explainStatusError(404).text).toMatch(/server extension missing/);
    expect(explainStatusError(404).title).toMatch(/jupyter server extension enable gpulens.jupyter/);
    expect(explainStatusError(403).text).toMatch(/not authorized/);
    expect(explainStatusError(null).text).toMatch(/unreachable/);
    expect(explainStatusError(500).text).toMatch(/500/);
  });
});

const recorded = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'train_step.profile.json'), 'utf8')) as Record<string, unknown>;

describe('profile payload', () => {
  it('parses the payload the Python side builds from an H200 capture', () => {
    const payload = parseProfile(recorded)!;
    expect(payload.backend).toBe('cupti');
    expect(payload.firstLine).toBe(2);
    const backward = payload.lines.find(line => line.line === 5)!;
    expect(backward.kernels.count).toBe(240);
    expect(backward.kernels.top.length).toBeGreaterThan(0);
    const item = payload.lines.find(line => line.line === 7)!;
    expect(item.syncs.count).toBe(20);
    expect(item.hints[0]).toMatch(/waits for the GPU 20 times/);
  });

  it('keeps working when fields are added, dropped or of the wrong type', () => {
    const payload = parseProfile({
      schema: 'gpulens.profile/9',
      source: { first_line: 2 },
      lines: [
        { line: 3, hits: 5, host_s: 0.01, brand_new: { x: 1 }, kernels: 'oops', transfers: { htod: { count: 2, bytes: 8 }, nvlink: { count: 1, bytes: 1, s: 0 } } },
        { hits: 1 },
        'not a line'
      ],
      more: true
    })!;
    expect(payload.lines).toHaveLength(1);
    const line = payload.lines[0]!;
    expect(line.kernels).toEqual({ count: 0, gpu_s: 0, top: [] });
    expect(line.transfers.htod).toEqual({ count: 2, bytes: 8, s: 0, pageable: 0 });
    // a direction the lab does not know keeps its name, as in the Python rules
    expect(lineCosts(line)).toBe('↑8 B 0 ms · nvlink1 B 0 ms');
    expect(lineDetails(line)).toContain('\n-  nvlink: 1 copy · 1 B · 0 ms');
    expect(payload.backend).toBe('unknown');
  });

  it('rejects what is not a profile payload', () => {
    expect(parseProfile({ schema: 'gpulens.status/1', lines: [] })).toBeNull();
    expect(parseProfile('gpulens.profile/1')).toBeNull();
  });

  it('maps payload lines to editor lines, with and without a %%gpulens line in the source', () => {
    expect(editorLine(2, false)).toBe(1);
    expect(editorLine(2, true)).toBe(2);
    expect(startsWithMagicLine('%%gpulens --backend host\nx = 1')).toBe(true);
    expect(startsWithMagicLine('x = 1\n%%gpulens')).toBe(false);
    expect(startsWithMagicLine('%%gpulensx')).toBe(false);
  });

  it('annotates a host-backend line with hits and host time only', () => {
    const payload = parseProfile({ schema: 'gpulens.profile/1', backend: 'host', lines: [{ line: 3, hits: 200, host_s: 0.051 }] })!;
    expect(lineCosts(payload.lines[0]!)).toBe('200 hits · 51 ms host');
  });

  it('tints by GPU cost for cupti, by host time for host', () => {
    const payload = parseProfile(recorded)!;
    const heat = heatByLine(payload);
    expect(Math.max(...heat.values())).toBe(1);
    expect(heat.get(2)).toBeLessThan(heat.get(5)!); // the range() line launches nothing
    const host = parseProfile({ schema: 'gpulens.profile/1', backend: 'host', lines: [{ line: 2, host_s: 1 }, { line: 3, host_s: 0.25 }] })!;
    expect([...heatByLine(host)]).toEqual([[2, 1], [3, 0.25]]);
  });

  it('lists top kernels, copies and syncs in the hover', () => {
    const payload = parseProfile(recorded)!;
    const hover = lineDetails(payload.lines.find(line => line.line === 5)!, payload.backend).split('\n');
    expect(hover[0]).toBe('**gpulens profile** · line 5 · cupti backend');
    expect(hover[3]).toMatch(/^- 240 kernels · \S+ \S+ on the GPU$/);
    expect(hover.filter(row => /^\| `.+` \| \d+ \| \S+ \S+ \|$/.test(row)).length).toBeGreaterThan(0);
  });
});

describe('numbers', () => {
  it('draws a sparkline in its box, clamped', () => {
    expect(sparklinePoints([0, 50, 200], 100, 10, 100)).toBe('0.0,10.0 50.0,5.0 100.0,0.0');
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

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  deviceChoices,
  needsWarning,
  parseStatus,
  shortGpuName,
  statusText,
  statusTooltip,
  type DeviceStatus,
} from '../../src/core/status';

const fixture = (name: string): unknown => JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));

function parsed(raw: unknown): DeviceStatus {
  const result = parseStatus(raw);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

const GIB = 1024 ** 3;
const h100 = {
  schema: 'gpulens.status/1',
  available: true,
  reason: null,
  driver_version: '580.159.04',
  cuda_driver_version: '13.0',
  gpus: [
    {
      index: 0,
      name: 'NVIDIA H100 80GB HBM3',
      utilization_pct: 37,
      memory_used_bytes: 12.3 * GIB,
      memory_total_bytes: 80 * GIB,
      temperature_c: 45,
      processes: [{ pid: 4242, name: 'python', used_memory_bytes: 12 * GIB }],
    },
  ],
  frameworks: {},
};

describe('status text', () => {
  it('shows one GPU as name, utilisation, memory and temperature', () => {
    expect(statusText(parsed(h100))).toBe('$(chip) H100 · 37% · 12.3/80 GB · 45°C');
  });

  it('shows CPU only when no GPU is available', () => {
    const status = parsed(fixture('status-cpu-only.json'));
    expect(status.available).toBe(false);
    expect(statusText(status)).toBe('$(circle-slash) CPU only');
  });

  it('shows the selected GPU of several, plus how many others', () => {
    const status = parsed(fixture('status-h200x2.json'));
    expect(statusText(status)).toBe('$(chip) H200 · 0% · 0.6/140.4 GB · 36°C (+1)');
    expect(statusText(status, 'cuda:1')).toBe('$(chip) H200 · 0% · 0.6/140.4 GB · 37°C (+1)');
    expect(statusText(status, 'cpu')).toBe('$(chip) cpu · 2 GPUs idle');
  });

  it('numbers GPUs as CUDA sees them when CUDA_VISIBLE_DEVICES hides some', () => {
    const raw = structuredClone(fixture('status-h200x2.json')) as { gpus: Array<Record<string, unknown>> };
    raw.gpus[0].visible = false;
    raw.gpus[0].cuda_device = null;
    raw.gpus[1].cuda_device = 'cuda:0';
    const status = parsed(raw);
    expect(statusText(status)).toBe('$(chip) H200 · 0% · 0.6/140.4 GB · 37°C');
    expect(deviceChoices(status).map((c) => c.device)).toEqual(['cuda:0', 'cpu']);
  });

  it('shortens NVIDIA names to the model', () => {
    expect(shortGpuName('NVIDIA H100 80GB HBM3')).toBe('H100');
    expect(shortGpuName('NVIDIA A100-SXM4-80GB')).toBe('A100');
    expect(shortGpuName('NVIDIA GeForce RTX 4090')).toBe('RTX 4090');
    expect(shortGpuName('NVIDIA H200')).toBe('H200');
    expect(shortGpuName('Tesla T4')).toBe('T4');
  });
});

describe('memory warning', () => {
  it('warns above 90 % of the shown GPU memory only', () => {
    const full = structuredClone(h100);
    full.gpus[0].memory_used_bytes = 0.91 * 80 * GIB;
    expect(needsWarning(parsed(full))).toBe(true);
    full.gpus[0].memory_used_bytes = 0.89 * 80 * GIB;
    expect(needsWarning(parsed(full))).toBe(false);
    expect(needsWarning(parsed(fixture('status-cpu-only.json')))).toBe(false);
  });

  it('warns when the shown GPU is lost', () => {
    const lost = structuredClone(h100) as unknown as { gpus: Array<Record<string, unknown>> };
    lost.gpus[0].error = 'GPU is lost';
    const status = parsed(lost);
    expect(needsWarning(status)).toBe(true);
    expect(statusText(status)).toBe('$(warning) H100 lost');
  });
});

describe('parsing', () => {
  it('ignores unknown fields and tolerates missing ones', () => {
    const status = parsed({
      schema: 'gpulens.status/1',
      available: true,
      something_new: { nested: [1, 2] },
      gpus: [{ index: 0, name: 'NVIDIA L4', new_metric: 3 }],
    });
    expect(status.gpus).toHaveLength(1);
    expect(status.gpus[0].utilizationPct).toBeUndefined();
    expect(statusText(status)).toBe('$(chip) L4');
  });

  it('reads a payload without a gpus list as no GPU', () => {
    const status = parsed({ schema: 'gpulens.status/1', available: true });
    expect(status.gpus).toEqual([]);
    expect(statusText(status)).toBe('$(circle-slash) CPU only');
    expect(deviceChoices(status).map((c) => c.device)).toEqual(['cpu']);
  });

  it('refuses another major schema and what is not an object', () => {
    expect(parseStatus({ schema: 'gpulens.status/2', gpus: [] }).ok).toBe(false);
    expect(parseStatus([1, 2]).ok).toBe(false);
    expect(parseStatus(null).ok).toBe(false);
    expect(parseStatus({ schema: 'gpulens.status/1.3', gpus: [] }).ok).toBe(true);
  });

  it('reads wrong types as absent, not as numbers', () => {
    const status = parsed({ schema: 'gpulens.status/1', available: true, gpus: [{ index: 0, name: 'X', utilization_pct: '37', temperature_c: null }] });
    expect(status.gpus[0].utilizationPct).toBeUndefined();
    expect(status.gpus[0].temperatureC).toBeUndefined();
  });
});

describe('tooltip', () => {
  it('lists every GPU, the processes, the driver and the frameworks', () => {
    const status = parsed(fixture('status-h200x2.json'));
    const tip = statusTooltip(status);
    expect(tip).toContain('NVIDIA driver 580\\.159\\.04');
    expect(tip.match(/^\| \**cuda:\d/gm)).toHaveLength(2);
    expect(tip).toContain('torch 2\\.11\\.0\\+cu130: cuda:0, cuda:1 · CUDA 13.0');
    const withProcess = statusTooltip(parsed(h100));
    expect(withProcess).toContain('python (pid 4242)');
  });

  it('gives the reason when there is no GPU', () => {
    const tip = statusTooltip(parsed(fixture('status-cpu-only.json')));
    expect(tip).toMatch(/^\*\*CPU only\*\* — No NVIDIA driver found/);
  });

  it('escapes markdown in names so a table cannot break', () => {
    const raw = structuredClone(h100);
    raw.gpus[0].name = 'NVIDIA X | *evil*';
    expect(statusTooltip(parsed(raw))).toContain('NVIDIA X \\| \\*evil\\*');
  });
});

/**
 * The `gpulens.status/1` payload (see DESIGN.md): read tolerantly, drawn as the status bar
 * text, its tooltip and the device choices. Pure; the rules follow
 * `gpulens.device.status.format_status_line` (short names, GiB, "CPU only", "lost").
 */

import { amount, isObject, list, num, obj, str } from './json';

export const STATUS_SCHEMA = 'gpulens.status/1';
const GIB = 1024 ** 3;
/** Memory use of the shown GPU above which the status item turns to the warning colour. */
export const MEMORY_WARNING_SHARE = 0.9;

export interface GpuProcess {
  pid: number;
  name: string;
  usedMemoryBytes?: number;
}

export interface Gpu {
  index: number;
  name: string;
  /** `cuda:N` as the user's interpreter numbers it; undefined when CUDA_VISIBLE_DEVICES hides it. */
  cudaDevice?: string;
  visible: boolean;
  utilizationPct?: number;
  memoryUsedBytes?: number;
  memoryTotalBytes?: number;
  temperatureC?: number;
  powerW?: number;
  powerLimitW?: number;
  smClockMhz?: number;
  processes: GpuProcess[];
  /** Set when NVML lost the GPU (e.g. fell off the bus). */
  error?: string;
}

export interface Framework {
  name: string;
  version?: string;
  devices: string[];
  cudaRuntime?: string;
  error?: string;
}

export interface DeviceStatus {
  available: boolean;
  reason?: string;
  driverVersion?: string;
  cudaDriverVersion?: string;
  cudaVisibleDevices?: string;
  gpus: Gpu[];
  frameworks: Framework[];
  frameworksPending: boolean;
  time?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** A major version we read: `gpulens.status/1`, also `/1.2` (minor additions are tolerated). */
function schemaMajorMatches(schema: string | undefined, expected: string): boolean {
  if (schema === undefined) return true; // older servers sent none; read what is there
  const [name, version] = expected.split('/');
  const match = /^([^/]+)\/(\d+)(?:\.\d+)*$/.exec(schema);
  return match !== null && match[1] === name && match[2] === version;
}

function parseGpu(raw: unknown, fallbackIndex: number): Gpu {
  const g = obj(raw);
  const index = num(g.index) ?? fallbackIndex;
  const gpu: Gpu = {
    index,
    name: str(g.name) ?? `GPU ${index}`,
    visible: g.visible !== false,
    processes: list(g.processes).filter(isObject).map((p) => ({
      pid: amount(p.pid),
      name: str(p.name) ?? '?',
      usedMemoryBytes: num(p.used_memory_bytes),
    })),
  };
  const cudaDevice = str(g.cuda_device);
  if (cudaDevice) gpu.cudaDevice = cudaDevice;
  const fields: Array<[keyof Gpu, unknown]> = [
    ['utilizationPct', g.utilization_pct],
    ['memoryUsedBytes', g.memory_used_bytes],
    ['memoryTotalBytes', g.memory_total_bytes],
    ['temperatureC', g.temperature_c],
    ['powerW', g.power_w],
    ['powerLimitW', g.power_limit_w],
    ['smClockMhz', g.sm_clock_mhz],
  ];
  for (const [key, value] of fields) {
    const n = num(value);
    if (n !== undefined) (gpu as unknown as Record<string, number>)[key] = n;
  }
  const error = str(g.error);
  if (error) gpu.error = error;
  return gpu;
}

export function parseStatus(raw: unknown): Parsed<DeviceStatus> {
  if (!isObject(raw)) return { ok: false, error: 'the status is not a JSON object' };
  const schema = str(raw.schema);
  if (!schemaMajorMatches(schema, STATUS_SCHEMA)) {
    return {
      ok: false,
      error: `status schema ${schema} is not ${STATUS_SCHEMA}: update the extension or gpulens so they match`,
    };
  }
  const gpus = list(raw.gpus).map(parseGpu);
  // CUDA numbers the GPUs it can see from 0; a server that sent no cuda_device leaves that to us
  let ordinal = 0;
  for (const gpu of gpus) {
    if (gpu.visible && gpu.cudaDevice === undefined) gpu.cudaDevice = `cuda:${ordinal}`;
    if (gpu.visible) ordinal += 1;
  }
  const frameworks = Object.entries(obj(raw.frameworks)).map(([name, value]): Framework => {
    const f = obj(value);
    return {
      name,
      version: str(f.version),
      devices: list(f.devices).filter((d): d is string => typeof d === 'string'),
      cudaRuntime: str(f.cuda_runtime),
      error: str(f.error),
    };
  });
  const available = typeof raw.available === 'boolean' ? raw.available : gpus.length > 0;
  return {
    ok: true,
    value: {
      available,
      reason: str(raw.reason),
      driverVersion: str(raw.driver_version),
      cudaDriverVersion: str(raw.cuda_driver_version),
      cudaVisibleDevices: str(raw.cuda_visible_devices),
      gpus,
      frameworks,
      frameworksPending: raw.frameworks_state === 'pending',
      time: str(raw.time),
    },
  };
}

/** "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-80GB" -> "A100", "NVIDIA GeForce RTX 4090" -> "RTX 4090". */
export function shortGpuName(name: string): string {
  const words = name
    .replace(/^NVIDIA\s+/i, '')
    .replace(/^(GeForce|Tesla|Quadro)\s+/i, '')
    .split(/[\s-]+/)
    .filter(Boolean);
  const kept: string[] = [];
  for (const word of words) {
    if (/^\d+\s*[GM]i?B$/i.test(word) || /^(HBM\d*e?|PCIe|SXM\d*|NVL\d*|MIG)$/i.test(word)) break;
    kept.push(word);
  }
  return kept.join(' ') || name.trim() || 'GPU';
}

/** Bytes as GiB, one decimal; a whole total (80 GiB) without it. */
export function gib(bytes: number | undefined, wholeIfRound = false): string {
  if (bytes === undefined) return '?';
  const value = bytes / GIB;
  if (wholeIfRound && Math.abs(value - Math.round(value)) < 0.05) return String(Math.round(value));
  return value.toFixed(1);
}

/** GPUs the user's programs can use, in CUDA order. */
export function visibleGpus(status: DeviceStatus): Gpu[] {
  return status.gpus.filter((gpu) => gpu.visible);
}

export interface Selection {
  /** The GPU the status bar shows; undefined when the device is the CPU or there is none. */
  gpu?: Gpu;
  /** How many other visible GPUs there are. */
  others: number;
  /** True when the chosen device is the CPU although GPUs exist. */
  cpuChosen: boolean;
}

/** The GPU named by the `gpulens.device` setting (`cuda`, `cuda:1`, `cpu`; unset: the first). */
export function selectGpu(status: DeviceStatus, device: string | undefined): Selection {
  const gpus = visibleGpus(status);
  if (!status.available || gpus.length === 0) return { others: 0, cpuChosen: false };
  const wanted = (device ?? '').trim();
  if (wanted !== '' && !wanted.startsWith('cuda')) {
    return { others: gpus.length, cpuChosen: wanted === 'cpu' };
  }
  const gpu = gpus.find((g) => g.cudaDevice === wanted) ?? gpus[0];
  return { gpu, others: gpus.length - 1, cpuChosen: false };
}

/** Devices a framework sees although NVML does not (Apple mps, ROCm, TPUs). */
function frameworkDevices(status: DeviceStatus): string[] {
  const seen: string[] = [];
  for (const framework of status.frameworks) {
    for (const device of framework.devices) {
      if (!device.startsWith('cpu') && !seen.includes(device)) seen.push(device);
    }
  }
  return seen;
}

export function memoryShare(gpu: Gpu): number | undefined {
  if (gpu.memoryUsedBytes === undefined || !gpu.memoryTotalBytes) return undefined;
  return gpu.memoryUsedBytes / gpu.memoryTotalBytes;
}

/** `$(chip) H100 · 37% · 12.3/80 GB · 45°C`, plus ` (+N)` for the other GPUs. */
export function statusText(status: DeviceStatus, device?: string): string {
  const selection = selectGpu(status, device);
  if (!selection.gpu) {
    if (selection.cpuChosen) {
      const count = selection.others;
      return `$(chip) cpu · ${count} GPU${count === 1 ? '' : 's'} idle`;
    }
    if (!status.available) {
      const others = frameworkDevices(status);
      if (others.length > 0) return `$(chip) ${others.join(', ')}`;
    } else if (device && device.trim() !== '') {
      return `$(chip) ${device.trim()}`;
    }
    return '$(circle-slash) CPU only';
  }
  const gpu = selection.gpu;
  const more = selection.others > 0 ? ` (+${selection.others})` : '';
  if (gpu.error) return `$(warning) ${shortGpuName(gpu.name)} lost${more}`;
  const parts = [shortGpuName(gpu.name)];
  if (gpu.utilizationPct !== undefined) parts.push(`${Math.round(gpu.utilizationPct)}%`);
  if (gpu.memoryTotalBytes !== undefined) {
    parts.push(`${gib(gpu.memoryUsedBytes)}/${gib(gpu.memoryTotalBytes, true)} GB`);
  }
  if (gpu.temperatureC !== undefined) parts.push(`${Math.round(gpu.temperatureC)}°C`);
  return `$(chip) ${parts.join(' · ')}${more}`;
}

/** Whether the shown GPU is above {@link MEMORY_WARNING_SHARE} of its memory, or lost. */
export function needsWarning(status: DeviceStatus, device?: string): boolean {
  const { gpu } = selectGpu(status, device);
  if (!gpu) return false;
  if (gpu.error) return true;
  const share = memoryShare(gpu);
  return share !== undefined && share > MEMORY_WARNING_SHARE;
}

/** Text for a markdown table cell or line: no table breaks, no markup. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, (c) => `\\${c}`);
}

function gpuRow(gpu: Gpu, chosen: boolean): string {
  const cells = [
    `${chosen ? '**' : ''}${gpu.cudaDevice ?? 'hidden'}${chosen ? '**' : ''}`,
    escapeMarkdown(gpu.name),
  ];
  if (gpu.error) {
    cells.push('lost', '', '', '');
  } else {
    cells.push(
      gpu.utilizationPct === undefined ? '–' : `${Math.round(gpu.utilizationPct)} %`,
      `${gib(gpu.memoryUsedBytes)} / ${gib(gpu.memoryTotalBytes)} GiB`,
      gpu.temperatureC === undefined ? '–' : `${Math.round(gpu.temperatureC)} °C`,
      gpu.powerW === undefined
        ? '–'
        : `${gpu.powerW.toFixed(0)}${gpu.powerLimitW ? ` / ${gpu.powerLimitW.toFixed(0)}` : ''} W`,
    );
  }
  return `| ${cells.join(' | ')} |`;
}

/** The tooltip: every GPU, its processes, driver, frameworks; the reason when there is no GPU. */
export function statusTooltip(status: DeviceStatus, device?: string): string {
  const lines: string[] = [];
  const { gpu: chosen } = selectGpu(status, device);
  if (status.available && status.gpus.length > 0) {
    lines.push(
      `**GPUs** · NVIDIA driver ${escapeMarkdown(status.driverVersion ?? '?')} · CUDA ${escapeMarkdown(
        status.cudaDriverVersion ?? '?',
      )}`,
      '',
      '| device | name | util | memory | temp | power |',
      '|---|---|---|---|---|---|',
      ...status.gpus.map((gpu) => gpuRow(gpu, gpu === chosen)),
      '',
    );
    if (status.cudaVisibleDevices !== undefined) {
      lines.push(`CUDA\\_VISIBLE\\_DEVICES=${escapeMarkdown(status.cudaVisibleDevices)}`, '');
    }
    const processes = status.gpus.flatMap((gpu) =>
      gpu.processes.map(
        (p) =>
          `- ${gpu.cudaDevice ?? `GPU ${gpu.index}`}: ${escapeMarkdown(p.name)} (pid ${p.pid})${
            p.usedMemoryBytes === undefined ? '' : ` · ${gib(p.usedMemoryBytes)} GiB`
          }`,
      ),
    );
    lines.push(processes.length > 0 ? '**Processes**' : 'Processes: none', '');
    if (processes.length > 0) lines.push(...processes, '');
    for (const gpu of status.gpus.filter((g) => g.error)) {
      lines.push(`GPU ${gpu.index}: ${escapeMarkdown(gpu.error ?? '')}`, '');
    }
  } else {
    lines.push(`**CPU only** — ${escapeMarkdown(status.reason ?? 'no GPU found.')}`, '');
  }
  if (status.frameworksPending) {
    lines.push('Frameworks: probing…');
  } else if (status.frameworks.length === 0) {
    lines.push('Frameworks: none of torch, cupy, jax, numba, tensorflow is installed');
  } else {
    lines.push('**Frameworks**', '');
    for (const f of status.frameworks) {
      const detail = f.error
        ? escapeMarkdown(f.error)
        : [
            f.devices.length > 0 ? f.devices.join(', ') : 'no GPU',
            f.cudaRuntime ? `CUDA ${f.cudaRuntime}` : undefined,
          ]
            .filter(Boolean)
            .join(' · ');
      lines.push(`- ${escapeMarkdown(f.name)} ${escapeMarkdown(f.version ?? '?')}: ${detail}`);
    }
  }
  lines.push('', '---', '', 'Click to choose the device the fixes write, or to run an environment check.');
  return lines.join('\n');
}

export interface DeviceChoice {
  device: string;
  label: string;
  description?: string;
  detail?: string;
}

/** The quick pick's devices: each visible GPU as `cuda:N`, then `cpu`. */
export function deviceChoices(status: DeviceStatus | undefined): DeviceChoice[] {
  const choices: DeviceChoice[] = [];
  for (const gpu of status ? visibleGpus(status) : []) {
    if (!gpu.cudaDevice) continue;
    const share = memoryShare(gpu);
    choices.push({
      device: gpu.cudaDevice,
      label: gpu.cudaDevice,
      description: gpu.name,
      detail: gpu.error
        ? 'lost'
        : [
            gpu.utilizationPct === undefined ? undefined : `${Math.round(gpu.utilizationPct)}% busy`,
            share === undefined ? undefined : `${gib(gpu.memoryUsedBytes)}/${gib(gpu.memoryTotalBytes)} GiB used`,
            gpu.processes.length > 0 ? `${gpu.processes.length} process(es)` : undefined,
          ]
            .filter(Boolean)
            .join(' · '),
    });
  }
  choices.push({ device: 'cpu', label: 'cpu', description: 'run on the CPU' });
  return choices;
}

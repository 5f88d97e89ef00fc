/**
 * Pure functions over the server's payloads: parsing (tolerant of unknown and missing fields),
 * and the few words and numbers the lab draws (a profiled line's costs follow the Python side's
 * rules, in lineFormat.ts). No DOM, no JupyterLab: unit-tested in node.
 */

// -- gpulens.status/1 ---------------------------------------------------------------------------

export interface GpuProcess {
  pid: number;
  name: string;
  used_memory_bytes: number | null;
  /** Set by the server when the process is one of its own kernels. */
  kernel?: { id?: string; name?: string } | null;
}

export interface GpuStatus {
  index: number;
  name: string;
  uuid: string | null;
  utilization_pct: number | null;
  memory_used_bytes: number | null;
  memory_total_bytes: number | null;
  temperature_c: number | null;
  power_w: number | null;
  power_limit_w: number | null;
  visible: boolean;
  processes: GpuProcess[];
}

export interface FrameworkStatus {
  version: string | null;
  cuda: boolean | null;
  devices: string[];
  error: string | null;
}

export interface StatusPayload {
  schema: string;
  available: boolean;
  reason: string | null;
  driver_version: string | null;
  cuda_driver_version: string | null;
  cuda_visible_devices: string | null;
  gpus: GpuStatus[];
  frameworks: Record<string, FrameworkStatus>;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function count(value: unknown): number {
  return num(value) ?? 0;
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The status payload, or null when `data` is not a `gpulens.status/*` payload. */
export function parseStatus(data: unknown): StatusPayload | null {
  if (!isObject(data) || !String(data.schema ?? '').startsWith('gpulens.status/')) {
    return null;
  }
  const gpus: GpuStatus[] = list(data.gpus)
    .filter(isObject)
    .map((gpu, position) => ({
      index: num(gpu.index) ?? position,
      name: str(gpu.name) ?? `GPU ${position}`,
      uuid: str(gpu.uuid),
      utilization_pct: num(gpu.utilization_pct),
      memory_used_bytes: num(gpu.memory_used_bytes),
      memory_total_bytes: num(gpu.memory_total_bytes),
      temperature_c: num(gpu.temperature_c),
      power_w: num(gpu.power_w),
      power_limit_w: num(gpu.power_limit_w),
      visible: gpu.visible !== false,
      processes: list(gpu.processes)
        .filter(isObject)
        .map(process => ({
          pid: count(process.pid),
          name: str(process.name) ?? '?',
          used_memory_bytes: num(process.used_memory_bytes),
          kernel: isObject(process.kernel)
            ? { id: str(process.kernel.id) ?? undefined, name: str(process.kernel.name) ?? undefined }
            : null
        }))
    }));
  const frameworks: Record<string, FrameworkStatus> = {};
  if (isObject(data.frameworks)) {
    for (const [name, info] of Object.entries(data.frameworks)) {
      if (!isObject(info)) {
        continue;
      }
      frameworks[name] = {
        version: str(info.version),
        cuda: typeof info.cuda === 'boolean' ? info.cuda : null,
        devices: list(info.devices).map(String),
        error: str(info.error)
      };
    }
  }
  return {
    schema: String(data.schema),
    available: data.available === true && gpus.length > 0,
    reason: str(data.reason),
    driver_version: str(data.driver_version),
    cuda_driver_version: str(data.cuda_driver_version),
    cuda_visible_devices: str(data.cuda_visible_devices),
    gpus,
    frameworks
  };
}

const VENDOR_WORDS = new Set(['nvidia', 'geforce', 'tesla', 'amd', 'radeon']);
const SERIES_WORDS = new Set(['rtx', 'gtx', 'quadro', 'titan']);

/** "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA GeForce RTX 4090" -> "RTX 4090". */
export function shortGpuName(name: string): string {
  const words = name.split(/\s+/).filter(word => word && !VENDOR_WORDS.has(word.toLowerCase()));
  const first = words[0];
  if (first === undefined) {
    return name.trim() || 'GPU';
  }
  if (SERIES_WORDS.has(first.toLowerCase()) && words[1] !== undefined) {
    return `${first} ${words[1]}`;
  }
  return first.split('-')[0] || first;
}

const GIB = 1024 ** 3;

/** Memory in GiB as "12.3/80 GB": one decimal for use, whole numbers for large totals. */
export function formatMemory(used: number | null, total: number | null): string {
  const usedText = used === null ? '?' : (used / GIB).toFixed(1);
  if (total === null) {
    return `${usedText} GB`;
  }
  const totalGib = total / GIB;
  const totalText = totalGib >= 10 ? Math.round(totalGib).toString() : totalGib.toFixed(1);
  return `${usedText}/${totalText} GB`;
}

export const CPU_ONLY = 'CPU only';

/** The status bar text: `H100 · 37% · 12.3/80 GB · 45°C`, `2× H100 · …`, or "CPU only". */
export function formatStatusText(status: StatusPayload): string {
  const gpus = status.gpus.filter(gpu => gpu.visible);
  const shown = gpus.length > 0 ? gpus : status.gpus;
  if (!status.available || shown.length === 0) {
    return CPU_ONLY;
  }
  const names = new Set(shown.map(gpu => shortGpuName(gpu.name)));
  const name = names.size === 1 ? [...names][0] : shortGpuName(shown[0]!.name) + '…';
  const label = shown.length > 1 ? `${shown.length}× ${name}` : name;
  const utils = shown.map(gpu => gpu.utilization_pct).filter((v): v is number => v !== null);
  const temps = shown.map(gpu => gpu.temperature_c).filter((v): v is number => v !== null);
  const sum = (values: (number | null)[]): number | null =>
    values.some(v => v === null) ? null : values.reduce<number>((a, b) => a + (b ?? 0), 0);
  const parts = [label];
  if (utils.length > 0) {
    parts.push(`${Math.round(utils.reduce((a, b) => a + b, 0) / utils.length)}%`);
  }
  parts.push(
    formatMemory(
      sum(shown.map(gpu => gpu.memory_used_bytes)),
      sum(shown.map(gpu => gpu.memory_total_bytes))
    )
  );
  if (temps.length > 0) {
    parts.push(`${Math.max(...temps)}°C`);
  }
  return parts.join(' · ');
}

/** The tooltip of the status item: why there is no GPU, or the driver versions. */
export function formatStatusTitle(status: StatusPayload): string {
  if (!status.available) {
    return `gpulens: no GPU usable here. ${status.reason ?? ''}`.trim();
  }
  const driver = status.driver_version ? ` · driver ${status.driver_version}` : '';
  const cuda = status.cuda_driver_version ? ` · CUDA ${status.cuda_driver_version}` : '';
  return `gpulens: ${status.gpus.length} GPU(s)${driver}${cuda}. Click for details.`;
}

/** What a failed `GET /gpulens/status` means, in one sentence a user can act on. */
export function explainStatusError(httpStatus: number | null): { text: string; title: string } {
  if (httpStatus === null) {
    return {
      text: 'GPU status: server unreachable',
      title: 'gpulens could not reach the Jupyter server; it retries every few seconds.'
    };
  }
  if (httpStatus === 404) {
    return {
      text: 'GPU status: server extension missing',
      title:
        'The gpulens server extension is not enabled: install gpulens[jupyter] in the ' +
        "server's environment and restart JupyterLab " +
        '(or run `jupyter server extension enable gpulens.jupyter`).'
    };
  }
  if (httpStatus === 401 || httpStatus === 403) {
    return {
      text: 'GPU status: not authorized',
      title: `The server refused /gpulens/status (HTTP ${httpStatus}): log in again, or ask the server's admin to allow the "gpulens" resource.`
    };
  }
  return {
    text: `GPU status: error ${httpStatus}`,
    title: `The server answered HTTP ${httpStatus} to /gpulens/status; its log says why.`
  };
}

// -- gpulens.profile/1 --------------------------------------------------------------------------

export const PROFILE_MIME = 'application/vnd.gpulens.profile+json';

export interface KernelCost {
  name: string;
  count: number;
  gpu_s: number;
}

export interface TransferCost {
  count: number;
  bytes: number;
  s: number;
  pageable: number;
}

export interface LineCost {
  line: number;
  hits: number;
  host_s: number;
  kernels: { count: number; gpu_s: number; top: KernelCost[] };
  transfers: Record<string, TransferCost>;
  memsets: { count: number; bytes: number; s: number };
  syncs: { count: number; stall_s: number };
  hints: string[];
}

export interface ProfilePayload {
  schema: string;
  backend: string;
  firstLine: number;
  wall_s: number;
  lines: LineCost[];
  warnings: string[];
  error: { type: string; message: string; line: number | null } | null;
}

/** The profile payload, or null when `data` is not a `gpulens.profile/*` payload. */
export function parseProfile(data: unknown): ProfilePayload | null {
  if (!isObject(data) || !String(data.schema ?? '').startsWith('gpulens.profile/')) {
    return null;
  }
  const source = isObject(data.source) ? data.source : {};
  const lines: LineCost[] = list(data.lines)
    .filter(isObject)
    .filter(line => num(line.line) !== null)
    .map(line => {
      const kernels = isObject(line.kernels) ? line.kernels : {};
      const transfers: Record<string, TransferCost> = {};
      if (isObject(line.transfers)) {
        for (const [direction, block] of Object.entries(line.transfers)) {
          if (isObject(block)) {
            transfers[direction] = {
              count: count(block.count),
              bytes: count(block.bytes),
              s: count(block.s),
              pageable: count(block.pageable)
            };
          }
        }
      }
      const memsets = isObject(line.memsets) ? line.memsets : {};
      const syncs = isObject(line.syncs) ? line.syncs : {};
      return {
        line: num(line.line)!,
        hits: count(line.hits),
        host_s: count(line.host_s),
        kernels: {
          count: count(kernels.count),
          gpu_s: count(kernels.gpu_s),
          top: list(kernels.top)
            .filter(isObject)
            .map(kernel => ({
              name: str(kernel.name) ?? '?',
              count: count(kernel.count),
              gpu_s: count(kernel.gpu_s)
            }))
        },
        transfers,
        memsets: { count: count(memsets.count), bytes: count(memsets.bytes), s: count(memsets.s) },
        syncs: { count: count(syncs.count), stall_s: count(syncs.stall_s) },
        hints: list(line.hints)
          .map(hint => (isObject(hint) ? str(hint.message) : str(hint)))
          .filter((hint): hint is string => hint !== null)
      };
    });
  const error = isObject(data.error)
    ? {
        type: str(data.error.type) ?? 'Error',
        message: str(data.error.message) ?? '',
        line: num(data.error.line)
      }
    : null;
  return {
    schema: String(data.schema),
    backend: str(data.backend) ?? 'unknown',
    firstLine: num(source.first_line) ?? 1,
    wall_s: count(data.wall_s),
    lines,
    warnings: list(data.warnings).map(String),
    error
  };
}

/**
 * The editor line (1-based) of a payload line. The magic numbers the `%%gpulens` line as 1.
 * When the cell's source starts with `%%gpulens` itself the numbers match; when the lab ran
 * the cell wrapped (its source has no magic line), the body's line 2 is the editor's line 1.
 */
export function editorLine(payloadLine: number, sourceHasMagicLine: boolean): number {
  return sourceHasMagicLine ? payloadLine : payloadLine - 1;
}

export function startsWithMagicLine(source: string): boolean {
  return /^%%gpulens\b/.test(source.trimStart());
}

/** What a line cost: GPU-side time when the backend saw the GPU, host time otherwise. */
export function lineCost(line: LineCost, backend: string): number {
  if (backend === 'host') {
    return line.host_s;
  }
  const copies = Object.values(line.transfers).reduce((total, block) => total + block.s, 0);
  return line.kernels.gpu_s + copies + line.memsets.s + line.syncs.stall_s || line.host_s;
}

/** Each line's share of the costliest line, in [0, 1]: the tint of its annotation. */
export function heatByLine(payload: ProfilePayload): Map<number, number> {
  const costs = payload.lines.map(line => [line.line, lineCost(line, payload.backend)] as const);
  const top = Math.max(0, ...costs.map(([, cost]) => cost));
  return new Map(costs.map(([line, cost]) => [line, top > 0 ? cost / top : 0]));
}

// -- sparkline ----------------------------------------------------------------------------------

/** SVG polyline points for `values` in [0, max], oldest left, in a width × height box. */
export function sparklinePoints(values: number[], width: number, height: number, max: number): string {
  if (values.length === 0 || max <= 0) {
    return '';
  }
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values
    .map((value, i) => {
      const clamped = Math.min(Math.max(value, 0), max);
      const x = values.length > 1 ? i * step : width;
      const y = height - (clamped / max) * height;
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
}

/** A bounded history of samples; the oldest drop out. */
export class History {
  private readonly samples: number[] = [];
  constructor(readonly capacity: number) {}
  push(value: number): void {
    this.samples.push(value);
    if (this.samples.length > this.capacity) {
      this.samples.splice(0, this.samples.length - this.capacity);
    }
  }
  values(): number[] {
    return [...this.samples];
  }
}

/**
 * The server's payloads, read tolerantly (unknown and missing fields are fine): the words and
 * figures the lab draws, as the Python side wrote them (`gpulens.device.display`,
 * `gpulens.profiler.display`). Nothing here formats a number or words a figure. No DOM, no
 * JupyterLab: unit-tested in node.
 */

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function obj(value: unknown): Json {
  return isObject(value) ? value : {};
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function strings(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

function objects(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

/** `gpulens.status/2`, `gpulens.profile/2.1`, …: the major version this client reads. */
function readable(data: unknown, kind: 'status' | 'profile'): data is Json {
  return (
    isObject(data) && new RegExp(`^gpulens\\.${kind}/2(\\.\\d+)*$`).test(str(data.schema) ?? '')
  );
}

// -- gpulens.status/2 ---------------------------------------------------------------------------

export interface GpuSection {
  index: number;
  heading: string;
  line: string;
  processes: string[][];
  processesNote: string | null;
}

/** What the status item and its popup show. */
export interface StatusView {
  text: string;
  title: string;
  heading: string;
  reason: string | null;
  facts: string | null;
  gpus: GpuSection[];
  history: { utilization: string; memory: string };
  frameworksHeading: string;
  frameworks: string[];
  /** Per GPU index, for the history charts: utilization and memory in use, in percent. */
  samples: Map<number, { utilization: number; memory: number }>;
}

/** The status payload's view, or null when `data` is not a payload this client reads. */
export function parseStatus(data: unknown): StatusView | null {
  if (!readable(data, 'status')) {
    return null;
  }
  const display = obj(data.display);
  const samples = new Map<number, { utilization: number; memory: number }>();
  for (const gpu of objects(data.gpus)) {
    const index = num(gpu.index);
    const total = num(gpu.memory_total_bytes);
    if (index !== null) {
      samples.set(index, {
        utilization: num(gpu.utilization_pct) ?? 0,
        memory: total ? (100 * (num(gpu.memory_used_bytes) ?? 0)) / total : 0,
      });
    }
  }
  const history = obj(display.history);
  const frameworks = obj(display.frameworks);
  return {
    text: str(display.text) ?? '',
    title: str(display.title) ?? '',
    heading: str(display.heading) ?? '',
    reason: str(display.reason),
    facts: str(display.facts),
    gpus: objects(display.gpus).map((gpu, position) => ({
      index: num(gpu.index) ?? position,
      heading: str(gpu.heading) ?? '',
      line: str(gpu.line) ?? '',
      processes: (Array.isArray(gpu.processes) ? gpu.processes : []).map(strings),
      processesNote: str(gpu.processes_note),
    })),
    history: { utilization: str(history.utilization) ?? '', memory: str(history.memory) ?? '' },
    frameworksHeading: str(frameworks.heading) ?? '',
    frameworks: strings(frameworks.lines),
    samples,
  };
}

/** What a failed `GET /gpulens/status` means, in one sentence a user can act on: the server
 * could not say it, so the lab does. */
export function explainStatusError(httpStatus: number | null): { text: string; title: string } {
  if (httpStatus === null) {
    return {
      text: 'GPU status: server unreachable',
      title: 'gpulens could not reach the Jupyter server; it retries every few seconds.',
    };
  }
  if (httpStatus === 404) {
    return {
      text: 'GPU status: server extension missing',
      title:
        'The gpulens server extension is not enabled: install gpulens[jupyter] in the ' +
        "server's environment and restart JupyterLab " +
        '(or run `jupyter server extension enable gpulens.jupyter`).',
    };
  }
  if (httpStatus === 401 || httpStatus === 403) {
    return {
      text: 'GPU status: not authorized',
      title: `The server refused /gpulens/status (HTTP ${httpStatus}): log in again, or ask the server's admin to allow the "gpulens" resource.`,
    };
  }
  return {
    text: `GPU status: error ${httpStatus}`,
    title: `The server answered HTTP ${httpStatus} to /gpulens/status; its log says why.`,
  };
}

// -- gpulens.profile/2 --------------------------------------------------------------------------

export const PROFILE_MIME = 'application/vnd.gpulens.profile+json';

/** A profiled line: the label drawn after it, its hover (Markdown), its heat (0..1). */
export interface ProfiledLine {
  line: number;
  label: string;
  hover: string;
  heat: number;
  hits: number;
}

/** The profile payload's lines, or null when `data` is not a payload this client reads. */
export function parseProfile(data: unknown): ProfiledLine[] | null {
  if (!readable(data, 'profile')) {
    return null;
  }
  return objects(data.lines).flatMap((line) => {
    const at = num(line.line);
    if (at === null) {
      return [];
    }
    return [
      {
        line: at,
        label: str(line.label) ?? '',
        hover: str(line.hover) ?? '',
        heat: Math.min(1, Math.max(0, num(line.heat) ?? 0)),
        hits: num(line.hits) ?? 0,
      },
    ];
  });
}

/**
 * A profile payload to hand back to the server as it is (the notebook-actions route merges it
 * into the cell's findings), or null when `data` is not a payload this client reads.
 */
export function profilePayload(data: unknown): Json | null {
  return readable(data, 'profile') ? data : null;
}

/** What tells one profile of a cell from the next: when it ran, and its wall time. */
export function profileKey(payload: Json | null): string {
  return payload ? `${str(payload.time) ?? ''}|${String(num(payload.wall_s) ?? '')}` : '';
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

// -- sparkline ----------------------------------------------------------------------------------

/** SVG polyline points for `values` in [0, max], oldest left, in a width × height box. */
export function sparklinePoints(
  values: number[],
  width: number,
  height: number,
  max: number,
): string {
  if (values.length === 0 || max <= 0) {
    return '';
  }
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const tenth = (value: number): number => Math.round(value * 10) / 10;
  return values
    .map((value, i) => {
      const clamped = Math.min(Math.max(value, 0), max);
      const x = values.length > 1 ? i * step : width;
      const y = height - (clamped / max) * height;
      return `${tenth(x)},${tenth(y)}`;
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

/**
 * The `gpulens.profile/1` payload (see DESIGN.md): read tolerantly, turned into what the editor
 * draws beside each line (a label, a heat level, a hover). Pure: no `vscode` import.
 */

import { amount, isObject, list, num, obj, str, type JsonObject } from './json';
import { shortSeconds } from './lineFormat';
import type { Parsed } from './status';

export const PROFILE_SCHEMA = 'gpulens.profile/1';
export const PROFILE_MIME = 'application/vnd.gpulens.profile+json';
/** Heat levels drawn: 0 (no tint) to HEAT_LEVELS (the line took all the time). */
export const HEAT_LEVELS = 8;

export interface Kernel {
  name: string;
  count: number;
  gpuS: number;
}

export interface Transfer {
  direction: 'htod' | 'dtoh' | 'dtod';
  count: number;
  bytes: number;
  s: number;
  pageable: number;
}

export interface LineCost {
  line: number;
  hits: number;
  hostS: number;
  kernelCount: number;
  kernelS: number;
  topKernels: Kernel[];
  /** In the payload's order (host→device, device→host, device→device). */
  transfers: Transfer[];
  memsetBytes: number;
  memsetCount: number;
  memsetS: number;
  syncCount: number;
  stallS: number;
  hints: string[];
}

export interface ProfileError {
  type: string;
  message: string;
  line?: number;
}

export interface Profile {
  path?: string;
  cell?: number;
  firstLine?: number;
  lastLine?: number;
  backend: string;
  gpuNames: string[];
  wallS: number;
  warnings: string[];
  lines: LineCost[];
  error?: ProfileError;
  /** What the profiled code printed. */
  output?: string;
  /** The profiled lines' source, from `firstLine` on. */
  code: string[];
}

function transfer(direction: Transfer['direction'], raw: unknown): Transfer {
  const t = obj(raw);
  return { direction, count: amount(t.count), bytes: amount(t.bytes), s: amount(t.s), pageable: amount(t.pageable) };
}

function parseLine(raw: JsonObject): LineCost | undefined {
  const line = num(raw.line);
  if (line === undefined || line < 1) return undefined;
  const kernels = obj(raw.kernels);
  const transfers = obj(raw.transfers);
  const memsets = obj(raw.memsets);
  const syncs = obj(raw.syncs);
  return {
    line: Math.floor(line),
    hits: amount(raw.hits),
    hostS: amount(raw.host_s),
    kernelCount: amount(kernels.count),
    kernelS: amount(kernels.gpu_s),
    topKernels: list(kernels.top)
      .filter(isObject)
      .map((k) => ({ name: str(k.name) ?? '?', count: amount(k.count), gpuS: amount(k.gpu_s) })),
    transfers: Object.keys(transfers)
      .filter((d): d is Transfer['direction'] => d === 'htod' || d === 'dtoh' || d === 'dtod')
      .map((d) => transfer(d, transfers[d])),
    memsetCount: amount(memsets.count),
    memsetBytes: amount(memsets.bytes),
    memsetS: amount(memsets.s),
    syncCount: amount(syncs.count),
    stallS: amount(syncs.stall_s),
    hints: list(raw.hints)
      .map((h) => (isObject(h) ? str(h.message) : str(h)))
      .filter((h): h is string => h !== undefined),
  };
}

function parseError(raw: unknown): ProfileError | undefined {
  if (typeof raw === 'string' && raw) return { type: 'Error', message: raw };
  if (!isObject(raw)) return undefined;
  return { type: str(raw.type) ?? 'Error', message: str(raw.message) ?? '', line: num(raw.line) };
}

export function parseProfile(raw: unknown): Parsed<Profile> {
  if (!isObject(raw)) return { ok: false, error: 'the profile is not a JSON object' };
  const schema = str(raw.schema);
  if (schema !== undefined && !/^gpulens\.profile\/1(\.\d+)*$/.test(schema)) {
    return { ok: false, error: `profile schema ${schema} is not ${PROFILE_SCHEMA}: update the extension or gpulens so they match` };
  }
  const source = obj(raw.source);
  return {
    ok: true,
    value: {
      path: str(source.path),
      cell: num(source.cell),
      firstLine: num(source.first_line),
      lastLine: num(source.last_line),
      backend: str(raw.backend) ?? 'unknown',
      gpuNames: list(raw.gpus)
        .filter(isObject)
        .map((g) => str(g.name) ?? '?'),
      wallS: amount(raw.wall_s),
      warnings: list(raw.warnings).filter((w): w is string => typeof w === 'string'),
      lines: list(raw.lines)
        .filter(isObject)
        .map(parseLine)
        .filter((l): l is LineCost => l !== undefined),
      error: parseError(raw.error),
      output: str(raw.output),
      code: list(raw.code).filter((c): c is string => typeof c === 'string'),
    },
  };
}

/** Seconds the GPU spent on the line's work: kernels, copies, memsets. */
export function deviceSeconds(line: LineCost): number {
  return line.kernelS + line.transfers.reduce((sum, t) => sum + t.s, 0) + line.memsetS;
}

export type HeatBasis = 'gpu' | 'host';

/** GPU time when the cell used the GPU at all, else host time (the host backend, CPU cells). */
export function heatBasis(profile: Profile): HeatBasis {
  return profile.lines.some((l) => deviceSeconds(l) > 0) ? 'gpu' : 'host';
}

export function lineSeconds(line: LineCost, basis: HeatBasis): number {
  return basis === 'gpu' ? deviceSeconds(line) : line.hostS;
}

/** Each line's share of the cell's time on `basis`, in [0, 1]. */
export function lineShares(profile: Profile): Map<number, number> {
  const basis = heatBasis(profile);
  const total = profile.lines.reduce((sum, l) => sum + lineSeconds(l, basis), 0);
  const shares = new Map<number, number>();
  for (const line of profile.lines) {
    shares.set(line.line, total > 0 ? lineSeconds(line, basis) / total : 0);
  }
  return shares;
}

/** 0 for no time; otherwise 1..HEAT_LEVELS, rounding up so any cost is visible. */
export function heatLevel(share: number): number {
  if (!(share > 0)) return 0;
  return Math.min(HEAT_LEVELS, Math.max(1, Math.ceil(share * HEAT_LEVELS)));
}

/** Background alpha of a heat level: faint to strong. */
export function heatAlpha(level: number): number {
  if (level <= 0) return 0;
  return Math.round((0.06 + (0.44 * (level - 1)) / (HEAT_LEVELS - 1)) * 100) / 100;
}

/** One line for the notification when the profile is done. */
export function profileSummary(profile: Profile): string {
  const where = profile.cell !== undefined ? `cell ${profile.cell}` : 'cell';
  const gpu = profile.lines.reduce((sum, l) => sum + deviceSeconds(l), 0);
  const parts = [`${where}: ${shortSeconds(profile.wallS)} wall`];
  if (gpu > 0) parts.push(`${shortSeconds(gpu)} on the GPU`);
  parts.push(`backend ${profile.backend}`);
  return parts.join(' · ');
}

/** Maps a payload line to a 0-based line of the document or cell the costs are drawn on. */
export function editorLine(payloadLine: number, offset: number): number {
  return payloadLine - 1 - offset;
}

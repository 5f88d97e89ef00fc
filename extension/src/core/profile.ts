/**
 * The `gpulens.profile/2` payload, read tolerantly: for each profiled line the label, hover
 * (Markdown) and heat the server wrote (`gpulens.profiler.display`), and the run's header,
 * summary, message and table. The editor draws these as they are. Pure: no `vscode` import.
 */

import { isObject, list, num, obj, str, type JsonObject } from './json';
import { schemaMatches, type Parsed } from './status';

export const PROFILE_SCHEMA = 'gpulens.profile/2';
export const PROFILE_MIME = 'application/vnd.gpulens.profile+json';
/** Tint levels drawn: 0 (none) to HEAT_LEVELS (the hottest line of the cell). */
export const HEAT_LEVELS = 8;

export interface ProfiledLine {
  line: number;
  label: string;
  hover: string;
  /** 0..1: the line's cost over the cell's costliest line's. */
  heat: number;
}

export interface TableColumn {
  title: string;
  align: 'left' | 'right';
}

export interface TableRow {
  line: number;
  heat: number;
  cells: string[];
}

export interface ProfileError {
  type: string;
}

export interface Profile {
  cell?: number;
  lines: ProfiledLine[];
  header: string;
  summary: string;
  /** Set when the payload is a saved profile shown again. */
  recorded?: string;
  /** One sentence when the run did not end well (or ran nothing). */
  message?: string;
  level?: 'info' | 'warning' | 'error';
  notes: string[];
  columns: TableColumn[];
  rows: TableRow[];
  legend: string;
  error?: ProfileError;
  /** What the profiled code printed. */
  output?: string;
}

function heatOf(value: unknown): number {
  const n = num(value) ?? 0;
  return Math.min(1, Math.max(0, n));
}

function parseLine(raw: JsonObject): ProfiledLine | undefined {
  const line = num(raw.line);
  if (line === undefined || line < 1) return undefined;
  return {
    line: Math.floor(line),
    label: str(raw.label) ?? '',
    hover: str(raw.hover) ?? '',
    heat: heatOf(raw.heat),
  };
}

function strings(value: unknown): string[] {
  return list(value).filter((s): s is string => typeof s === 'string');
}

export function parseProfile(raw: unknown): Parsed<Profile> {
  if (!isObject(raw)) return { ok: false, error: 'the profile is not a JSON object' };
  const schema = str(raw.schema);
  if (!schemaMatches(schema, PROFILE_SCHEMA)) {
    return {
      ok: false,
      error: `profile schema ${schema ?? '(none)'} is not ${PROFILE_SCHEMA}: update the extension or gpulens so they match`,
    };
  }
  const display = obj(raw.display);
  const table = obj(display.table);
  const level = str(display.level);
  const error = obj(raw.error);
  return {
    ok: true,
    value: {
      cell: num(obj(raw.source).cell),
      lines: list(raw.lines)
        .filter(isObject)
        .map(parseLine)
        .filter((l): l is ProfiledLine => l !== undefined),
      header: str(display.header) ?? '',
      summary: str(display.summary) ?? '',
      recorded: str(display.recorded),
      message: str(display.message),
      level: level === 'info' || level === 'warning' || level === 'error' ? level : undefined,
      notes: strings(display.notes),
      columns: list(table.columns)
        .filter(isObject)
        .map((c) => ({ title: str(c.title) ?? '', align: c.align === 'right' ? 'right' : 'left' })),
      rows: list(table.rows)
        .filter(isObject)
        .map((r) => ({ line: num(r.line) ?? 0, heat: heatOf(r.heat), cells: strings(r.cells) })),
      legend: str(table.legend) ?? '',
      error: isObject(raw.error) ? { type: str(error.type) ?? 'Error' } : undefined,
      output: str(raw.output),
    },
  };
}

/** 0 for no heat; otherwise 1..HEAT_LEVELS, rounding up so any cost is visible. */
export function heatLevel(heat: number): number {
  if (!(heat > 0)) return 0;
  return Math.min(HEAT_LEVELS, Math.max(1, Math.ceil(heat * HEAT_LEVELS)));
}

/** Background alpha of a heat level: faint to strong. */
export function heatAlpha(level: number): number {
  if (level <= 0) return 0;
  return 0.06 + (0.44 * (level - 1)) / (HEAT_LEVELS - 1);
}

/** Maps a payload line to a 0-based line of the document or cell the costs are drawn on. */
export function editorLine(payloadLine: number, offset: number): number {
  return payloadLine - 1 - offset;
}

export interface LineMark extends ProfiledLine {
  /** 0-based line of the editor. */
  at: number;
  level: number;
}

/** What the editor draws for each profiled line that falls inside a document of `lineCount`
 * lines: the payload's label and hover at the line, tinted by its heat. */
export function lineMarks(profile: Profile, offset: number, lineCount: number): LineMark[] {
  return profile.lines
    .map((line) => ({ ...line, at: editorLine(line.line, offset), level: heatLevel(line.heat) }))
    .filter((mark) => mark.at >= 0 && mark.at < lineCount);
}

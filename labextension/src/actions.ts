/**
 * The `gpulens.notebook-actions/1` answer of `POST /gpulens/analyze`: findings with their fixes,
 * "Fix all in notebook" and the selection refactors, every word and edit made by the Python side.
 * Offsets count UTF-16 code units of a cell's text, as JavaScript strings and CodeMirror do, so
 * nothing here converts a position. Pure: no DOM, no JupyterLab.
 */

export const ACTIONS_SCHEMA = 'gpulens.notebook-actions/1';

export interface CellEdit {
  from: number;
  to: number;
  insert: string;
}

/** The edits an action makes to one code cell (`cell`: its index among the code cells). */
export interface CellChange {
  cell: number;
  edits: CellEdit[];
}

export interface FixAction {
  title: string;
  /** What a menu shows. */
  label: string;
  safe: boolean;
  preferred: boolean;
  cells: CellChange[];
}

export interface FindingEntry {
  code: string;
  severity: string;
  message: string;
  /** `analysis`, or `profile`: the cell's last profile found it where the analysis was silent. */
  origin?: string;
  /** What a hover over the finding shows. */
  hover: string;
  from: number;
  to: number;
  fixes: FixAction[];
}

export interface RefactorEntry {
  id: string;
  label: string;
  /** Whether the user picks a device first (the request then names it). */
  asks_device: boolean;
}

export interface RefactorResult {
  id: string;
  title: string;
  cells: CellChange[];
  /** Why nothing changes, when nothing does. */
  message: string | null;
}

export interface ActionsAnswer {
  schema: string;
  device: string;
  /** Why the project's `[tool.gpulens]` could not be used, in a line. */
  problem: string | null;
  cells: { findings: FindingEntry[] }[];
  refactors: RefactorEntry[];
  device_prompt: string;
  /** The tooltip of a line's light bulb. */
  bulb_title: string;
  fix_all: { label: string; cells: CellChange[] | null } | null;
  refactor?: RefactorResult;
}

export interface ActionsRequest {
  cells: string[];
  path?: string;
  device?: string;
  fix_all?: boolean;
  selection?: { cell: number; from: number; to: number };
  refactor?: string;
  /** Per code cell, its last profile's payload (merged into its findings), or null. */
  profiles?: (Record<string, unknown> | null)[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The answer, or null for anything that is not a `gpulens.notebook-actions/1` payload. */
export function parseAnswer(value: unknown): ActionsAnswer | null {
  if (!isObject(value) || value.schema !== ACTIONS_SCHEMA || !Array.isArray(value.cells)) {
    return null;
  }
  if (!value.cells.every((cell) => isObject(cell) && Array.isArray(cell.findings))) {
    return null;
  }
  return {
    ...(value as unknown as ActionsAnswer),
    refactors: Array.isArray(value.refactors) ? (value.refactors as RefactorEntry[]) : [],
    fix_all: isObject(value.fix_all)
      ? (value.fix_all as unknown as ActionsAnswer['fix_all'])
      : null,
  };
}

/** Something whose text can be replaced between two offsets (a cell's shared model). */
export interface Replaceable {
  replace(from: number, to: number, insert: string): void;
}

/** Applies one cell's edits, from the last to the first: each leaves the offsets before it valid. */
export function applyEdits(target: Replaceable, edits: readonly CellEdit[]): void {
  for (const edit of [...edits].sort((a, b) => b.from - a.from)) {
    target.replace(edit.from, edit.to, edit.insert);
  }
}

/**
 * The findings of code cell `cell` that touch the text between `from` and `to` (a line's
 * offsets), in the answer's order.
 */
export function findingsBetween(
  answer: ActionsAnswer,
  cell: number,
  from: number,
  to: number,
): FindingEntry[] {
  const findings = answer.cells[cell]?.findings ?? [];
  return findings.filter((finding) => finding.from <= to && finding.to >= from);
}

/** The fixes offered on those findings, in menu order (each finding's preferred fix first). */
export function fixesOf(findings: readonly FindingEntry[]): FixAction[] {
  return findings.flatMap((finding) => finding.fixes.filter((fix) => fix.cells.length > 0));
}

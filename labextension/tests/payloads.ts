// The payloads payloads.setup.ts had the Python side write for this run.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO = resolve(__dirname, '..', '..');
export const PAYLOADS = join(REPO, '.cache', 'client-payloads', 'labextension');

export type Json = any;

/** Every payload of a kind, by name: `status-h200x2`, `profile-train_step`, … */
export function payloads(kind: 'status' | 'profile'): Array<[string, Json]> {
  const index = JSON.parse(readFileSync(join(PAYLOADS, 'index.json'), 'utf8')) as Record<
    string,
    string[]
  >;
  return (index[kind] ?? []).map((name) => [name, payload(name)]);
}

export function payload(name: string): Json {
  return JSON.parse(readFileSync(join(PAYLOADS, `${name}.json`), 'utf8'));
}

/** A field a client may draw: its place in a payload, and other values it can take. */
export interface Field {
  payload: string;
  path: (string | number)[];
  values: unknown[];
}

/** The fields of a kind's payloads that the Python side lists as drawn, by name
 * (`display.gpus.[].heading`); see scripts/client_payloads.py. */
export function fields(kind: 'status' | 'profile'): [string, Field[]][] {
  const all = JSON.parse(readFileSync(join(PAYLOADS, 'fields.json'), 'utf8')) as Record<
    string,
    Record<string, Field[]>
  >;
  return Object.entries(all[kind] ?? {});
}

/** Whether `draw` draws the field: another value of it changes the drawing. */
export function drawsField(draw: (raw: Json) => string, field: Field): boolean {
  const raw = payload(field.payload);
  return field.values.some((value) => draw(withValue(raw, field.path, value)) !== draw(raw));
}

/** A copy of the payload `raw` with the field at `path` set to `value`. */
function withValue(raw: Json, path: (string | number)[], value: unknown): Json {
  const copy = structuredClone(raw);
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key];
  at[path[path.length - 1]!] = value;
  return copy;
}

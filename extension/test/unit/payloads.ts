// The payloads payloads.setup.ts had the Python side write for this run.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO = resolve(__dirname, '..', '..', '..');
export const PAYLOADS = join(REPO, '.cache', 'client-payloads', 'extension');

export type Json = any;

/** Every payload of a kind, by name: `status-h200x2`, `profile-train_step`, … */
export function payloads(kind: 'status' | 'profile'): Array<[string, Json]> {
  const index = JSON.parse(readFileSync(join(PAYLOADS, 'index.json'), 'utf8')) as Record<
    string,
    string[]
  >;
  return index[kind].map((name) => [name, payload(name)]);
}

export function payload(name: string): Json {
  return JSON.parse(readFileSync(join(PAYLOADS, `${name}.json`), 'utf8'));
}

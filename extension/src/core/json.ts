/** Tolerant readers for JSON payloads: a field of the wrong type reads as absent. Pure. */

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A count or a duration: absent, negative or not a number reads as 0. */
export function amount(value: unknown): number {
  const n = num(value);
  return n !== undefined && n > 0 ? n : 0;
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function obj(value: unknown): JsonObject {
  return isObject(value) ? value : {};
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The `gpulens.status/2` payload's `display` block, read tolerantly: the status bar text for
 * each device a user may choose, its tooltip (Markdown), and the device choices. The server
 * writes every word and figure (`gpulens.device.display`); this only picks and draws. Pure.
 */

import { isObject, list, obj, str } from './json';

export const STATUS_SCHEMA = 'gpulens.status/2';

/** What the status bar shows: text and tooltip as the server wrote them. */
export interface StatusBarView {
  text: string;
  /** `gpu`, `cpu` (no GPU usable) or `lost`; drawn as an icon. */
  icon: string;
  warning: boolean;
}

export interface DeviceChoice extends StatusBarView {
  device: string;
  label: string;
  description: string;
  detail: string;
}

export interface DeviceStatus extends StatusBarView {
  tooltip: string;
  devices: DeviceChoice[];
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** A major version we read: `gpulens.status/2`, also `/2.1` (additions are tolerated). */
export function schemaMatches(schema: string | undefined, expected: string): boolean {
  const [name, version] = expected.split('/');
  const match = /^([^/]+)\/(\d+)(?:\.\d+)*$/.exec(schema ?? '');
  return match !== null && match[1] === name && match[2] === version;
}

function bar(raw: Record<string, unknown>): StatusBarView {
  return { text: str(raw.text) ?? '', icon: str(raw.icon) ?? 'gpu', warning: raw.warning === true };
}

export function parseStatus(raw: unknown): Parsed<DeviceStatus> {
  if (!isObject(raw)) return { ok: false, error: 'the status is not a JSON object' };
  const schema = str(raw.schema);
  if (!schemaMatches(schema, STATUS_SCHEMA)) {
    return {
      ok: false,
      error: `status schema ${schema ?? '(none)'} is not ${STATUS_SCHEMA}: update the extension or gpulens so they match`,
    };
  }
  const display = obj(raw.display);
  const devices = list(display.devices)
    .filter(isObject)
    .map((choice): DeviceChoice => ({
      ...bar(choice),
      device: str(choice.device) ?? '',
      label: str(choice.label) ?? '',
      description: str(choice.description) ?? '',
      detail: str(choice.detail) ?? '',
    }))
    .filter((choice) => choice.device !== '');
  return { ok: true, value: { ...bar(display), tooltip: str(display.tooltip) ?? '', devices } };
}

/** The status bar while `device` (the `gpulens.device` setting) is chosen; unset or not a
 * device of this machine: what the server shows for `cuda`, the first GPU CUDA sees. */
export function statusFor(status: DeviceStatus, device?: string): StatusBarView {
  const wanted = (device ?? '').trim();
  return status.devices.find((choice) => choice.device === wanted) ?? status;
}

/** The payload's icon names, as codicons. */
const ICONS: Record<string, string> = {
  gpu: '$(chip)',
  cpu: '$(circle-slash)',
  lost: '$(warning)',
};
const CLICK_HINT = 'Click to choose the device the fixes write, or to run an environment check.';

export interface StatusBarDrawing {
  text: string;
  tooltip: string;
  warning: boolean;
}

/** The status bar item for `device`: the server's text behind its icon, its tooltip. */
export function drawStatusBar(status: DeviceStatus, device?: string): StatusBarDrawing {
  const shown = statusFor(status, device);
  return {
    text: `${ICONS[shown.icon] ?? ICONS.gpu} ${shown.text}`,
    tooltip: `${status.tooltip}\n\n---\n\n${CLICK_HINT}`,
    warning: shown.warning,
  };
}

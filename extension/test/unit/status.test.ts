import { describe, expect, it } from 'vitest';
import { drawStatusBar, parseStatus, statusFor, type DeviceStatus } from '../../src/core/status';
import { drawsField, fields, payload, payloads, type Json } from './payloads';

function parsed(raw: unknown): DeviceStatus {
  const result = parseStatus(raw);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe('every status payload the server makes, as the status bar draws it', () => {
  const all = payloads('status');

  it('has the machines and cases the clients must draw', () => {
    const names = all.map(([name]) => name);
    for (const name of [
      'status-cpu-only',
      'status-h200x2',
      'status-h200x1',
      'status-lost',
      'status-mps',
    ]) {
      expect(names).toContain(name);
    }
  });

  it.each(all)("%s: the text, icon, warning and tooltip are the server's", (_name, raw: Json) => {
    const display = raw.display;
    const drawn = drawStatusBar(parsed(raw));
    const icon = { gpu: '$(chip)', cpu: '$(circle-slash)', lost: '$(warning)' }[
      display.icon as string
    ];
    expect(drawn.text).toBe(`${icon} ${display.text}`);
    expect(drawn.warning).toBe(display.warning);
    expect(drawn.tooltip.startsWith(display.tooltip)).toBe(true);
  });

  it.each(all)('%s: each device choice, and the bar while it is chosen', (_name, raw: Json) => {
    const status = parsed(raw);
    expect(status.devices).toEqual(
      raw.display.devices.map((choice: Json) => ({
        device: choice.device,
        label: choice.label,
        description: choice.description,
        detail: choice.detail,
        text: choice.text,
        icon: choice.icon,
        warning: choice.warning,
      })),
    );
    for (const choice of raw.display.devices) {
      expect(drawStatusBar(status, choice.device).text.endsWith(` ${choice.text}`)).toBe(true);
    }
  });
});

/** Fields of the display block that JupyterLab's status popup draws as lines; the status
 * bar's tooltip says the same in Markdown. */
const LAB_POPUP_FIELDS = ['title', 'reason', 'heading', 'facts', 'gpus', 'history', 'frameworks'];

/** Everything the status bar shows of a payload: its item for each device, the device picker. */
function drawing(raw: Json): string {
  const status = parsed(raw);
  const bars = status.devices.map((choice) => drawStatusBar(status, choice.device));
  return JSON.stringify([status, drawStatusBar(status), bars]);
}

describe('every display field the server writes is drawn, or left to JupyterLab by name', () => {
  const drawn = fields('status').filter(
    ([, all]) => !LAB_POPUP_FIELDS.includes(String(all[0].path[1])),
  );

  it.each(drawn)('%s', (_name, all) => {
    for (const field of all) expect(drawsField(drawing, field), field.payload).toBe(true);
  });

  it('knows each field it leaves to JupyterLab', () => {
    const names = new Set(fields('status').map(([, all]) => String(all[0].path[1])));
    for (const name of LAB_POPUP_FIELDS) expect(names).toContain(name);
  });
});

describe('choosing what to show', () => {
  it('shows the chosen GPU of several, the first one CUDA sees when none is chosen', () => {
    const status = parsed(payload('status-h200x2'));
    expect(statusFor(status).text).toBe(status.text);
    expect(statusFor(status, 'cuda').text).toBe(status.text);
    expect(statusFor(status, 'cuda:1')).toMatchObject(
      status.devices.find((c) => c.device === 'cuda:1')!,
    );
    expect(statusFor(status, ' cpu ').text).toBe(
      status.devices.find((c) => c.device === 'cpu')!.text,
    );
    expect(statusFor(status, 'cuda:7').text).toBe(status.text); // not a device of this machine
  });

  it('says CPU only, with the reason in the tooltip, where there is no GPU', () => {
    const raw = payload('status-cpu-only');
    const drawn = drawStatusBar(parsed(raw));
    expect(drawn.text).toBe('$(circle-slash) CPU only');
    expect(drawn.tooltip).toContain('No NVIDIA driver found');
  });
});

describe('parsing', () => {
  const status = payload('status-h200x2');

  it('ignores fields it does not know', () => {
    const raw = {
      ...status,
      something_new: [1],
      display: { ...status.display, also_new: { a: 1 } },
    };
    expect(parsed(raw).text).toBe(status.display.text);
  });

  it('reads a payload whose display block is missing or broken as empty, not as an error', () => {
    expect(parsed({ schema: 'gpulens.status/2' })).toEqual({
      text: '',
      icon: 'gpu',
      warning: false,
      tooltip: '',
      devices: [],
    });
    expect(
      parsed({ schema: 'gpulens.status/2', display: { devices: ['x', { label: 'no device' }] } })
        .devices,
    ).toEqual([]);
  });

  it('refuses another major schema, no schema, and what is not an object', () => {
    expect(parseStatus({ ...status, schema: 'gpulens.status/1' }).ok).toBe(false);
    expect(parseStatus({ ...status, schema: undefined }).ok).toBe(false);
    expect(parseStatus({ ...status, schema: 'gpulens.status/2.3' }).ok).toBe(true);
    expect(parseStatus([1, 2]).ok).toBe(false);
    expect(parseStatus(null).ok).toBe(false);
  });
});

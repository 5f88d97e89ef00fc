/**
 * The status bar item: `GET /gpulens/status` every 2 s (on standby while the tab is hidden),
 * and a popup with every GPU, its processes, the kernel's frameworks and recent history.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { showPopup } from '@jupyterlab/statusbar';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import {
  explainStatusError,
  formatMemory,
  formatStatusText,
  formatStatusTitle,
  History,
  parseStatus,
  sparklinePoints,
  type StatusPayload
} from './format';

const POLL_MS = 2000;
/** Five minutes of samples at one per poll. */
const HISTORY_SAMPLES = (5 * 60 * 1000) / POLL_MS;

interface GpuHistory {
  utilization: History;
  memory: History;
}

/** The last answer of the route: a payload or an HTTP status (null: no answer). */
type Reading = { status: StatusPayload } | { error: number | null };

async function fetchStatus(settings: ServerConnection.ISettings): Promise<Reading> {
  const url = URLExt.join(settings.baseUrl, 'gpulens', 'status');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch {
    return { error: null };
  }
  if (!response.ok) {
    return { error: response.status };
  }
  const status = parseStatus(await response.json().catch(() => null));
  return status ? { status } : { error: response.status };
}

export class GpuStatusItem extends Widget {
  private readonly poll: Poll;
  private readonly histories = new Map<number, GpuHistory>();
  private reading: Reading | null = null;
  private popup: Widget | null = null;

  constructor(private readonly settings = ServerConnection.makeSettings()) {
    super();
    this.addClass('gpulens-status');
    this.node.textContent = 'GPU …';
    this.node.title = 'gpulens: reading the GPU status';
    this.node.addEventListener('click', () => this.openPopup());
    this.poll = new Poll({
      auto: true,
      factory: () => this.refresh(),
      frequency: { interval: POLL_MS, backoff: false },
      linger: 0,
      name: 'gpulens:status',
      standby: 'when-hidden'
    });
  }

  override dispose(): void {
    this.poll.dispose();
    super.dispose();
  }

  private async refresh(): Promise<void> {
    this.reading = await fetchStatus(this.settings);
    if ('status' in this.reading) {
      this.record(this.reading.status);
      this.node.textContent = formatStatusText(this.reading.status);
      this.node.title = formatStatusTitle(this.reading.status);
      this.node.classList.remove('gpulens-status-error');
    } else {
      const explained = explainStatusError(this.reading.error);
      this.node.textContent = explained.text;
      this.node.title = explained.title;
      this.node.classList.add('gpulens-status-error');
    }
    if (this.popup && !this.popup.isDisposed) {
      renderDetails(this.popup.node, this.reading, this.histories);
    }
  }

  private record(status: StatusPayload): void {
    for (const gpu of status.gpus) {
      let history = this.histories.get(gpu.index);
      if (!history) {
        history = { utilization: new History(HISTORY_SAMPLES), memory: new History(HISTORY_SAMPLES) };
        this.histories.set(gpu.index, history);
      }
      history.utilization.push(gpu.utilization_pct ?? 0);
      const total = gpu.memory_total_bytes ?? 0;
      history.memory.push(total > 0 ? (100 * (gpu.memory_used_bytes ?? 0)) / total : 0);
    }
  }

  private openPopup(): void {
    const body = new Widget();
    body.addClass('gpulens-popup');
    renderDetails(body.node, this.reading, this.histories);
    this.popup = body;
    showPopup({ body, anchor: this, align: 'left', hasDynamicSize: true });
  }
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  className?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) {
    node.textContent = text;
  }
  if (className) {
    node.className = className;
  }
  return node;
}

function sparkline(values: number[], label: string): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'gpulens-sparkline');
  svg.setAttribute('viewBox', '0 0 120 24');
  svg.setAttribute('width', '120');
  svg.setAttribute('height', '24');
  svg.setAttribute('aria-label', label);
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', sparklinePoints(values, 120, 24, 100));
  svg.appendChild(line);
  return svg;
}

/** Fills `node` with the details of the last reading. */
function renderDetails(node: HTMLElement, reading: Reading | null, histories: Map<number, GpuHistory>): void {
  node.replaceChildren();
  node.appendChild(element('h3', 'GPU status', 'gpulens-popup-title'));
  if (reading === null) {
    node.appendChild(element('p', 'Reading the GPU status…'));
    return;
  }
  if ('error' in reading) {
    const explained = explainStatusError(reading.error);
    node.appendChild(element('p', explained.title, 'gpulens-popup-error'));
    return;
  }
  const status = reading.status;
  if (!status.available) {
    node.appendChild(element('p', `${formatStatusText(status)}: ${status.reason ?? 'no GPU found.'}`));
  }
  const facts = [
    status.driver_version && `driver ${status.driver_version}`,
    status.cuda_driver_version && `CUDA ${status.cuda_driver_version}`,
    status.cuda_visible_devices !== null && `CUDA_VISIBLE_DEVICES=${status.cuda_visible_devices}`
  ].filter(Boolean);
  if (facts.length) {
    node.appendChild(element('p', facts.join(' · '), 'gpulens-popup-facts'));
  }
  for (const gpu of status.gpus) {
    const section = element('section', undefined, 'gpulens-gpu');
    const head = `GPU ${gpu.index}: ${gpu.name}${gpu.visible ? '' : ' (hidden by CUDA_VISIBLE_DEVICES)'}`;
    section.appendChild(element('h4', head));
    const figures = [
      gpu.utilization_pct !== null && `${gpu.utilization_pct}% busy`,
      formatMemory(gpu.memory_used_bytes, gpu.memory_total_bytes),
      gpu.temperature_c !== null && `${gpu.temperature_c}°C`,
      gpu.power_w !== null && `${Math.round(gpu.power_w)}${gpu.power_limit_w ? `/${Math.round(gpu.power_limit_w)}` : ''} W`
    ].filter(Boolean);
    section.appendChild(element('div', figures.join(' · ')));
    const history = histories.get(gpu.index);
    if (history) {
      const charts = element('div', undefined, 'gpulens-charts');
      charts.append(
        element('span', 'util'),
        sparkline(history.utilization.values(), `GPU ${gpu.index} utilization`),
        element('span', 'mem'),
        sparkline(history.memory.values(), `GPU ${gpu.index} memory`)
      );
      section.appendChild(charts);
    }
    if (gpu.processes.length) {
      const table = element('table', undefined, 'gpulens-processes');
      for (const process of gpu.processes) {
        const row = element('tr', undefined, process.kernel ? 'gpulens-own-kernel' : undefined);
        const owner = process.kernel ? ` (kernel ${process.kernel.name ?? process.kernel.id ?? ''})` : '';
        row.append(
          element('td', String(process.pid)),
          element('td', process.name + owner),
          element('td', process.used_memory_bytes === null ? '' : formatMemory(process.used_memory_bytes, null))
        );
        table.appendChild(row);
      }
      section.appendChild(table);
    } else {
      section.appendChild(element('div', 'no processes', 'gpulens-muted'));
    }
    node.appendChild(section);
  }
  const frameworks = Object.entries(status.frameworks);
  node.appendChild(element('h4', "Frameworks (the kernel's interpreter)"));
  if (frameworks.length === 0) {
    node.appendChild(element('div', 'none of torch, CuPy, JAX, Numba found', 'gpulens-muted'));
  }
  for (const [name, info] of frameworks) {
    const where = info.error ?? (info.devices.length ? info.devices.join(', ') : info.cuda ? 'CUDA' : 'CPU only');
    node.appendChild(element('div', `${name} ${info.version ?? ''} · ${where}`, 'gpulens-framework'));
  }
}

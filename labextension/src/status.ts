/**
 * The status bar item: `GET /gpulens/status` every 2 s (on standby while the tab is hidden),
 * and a popup with every GPU, its processes, the kernel's frameworks and recent history. The
 * words and figures are the payload's (`display`); the charts are drawn from its numbers.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { showPopup } from '@jupyterlab/statusbar';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import {
  explainStatusError,
  History,
  parseStatus,
  sparklinePoints,
  type StatusView,
} from './payloads';

const POLL_MS = 2000;
/** Five minutes of samples at one per poll. */
const HISTORY_SAMPLES = (5 * 60 * 1000) / POLL_MS;

interface GpuHistory {
  utilization: History;
  memory: History;
}

/** The last answer of the route: a payload or an HTTP status (null: no answer). */
type Reading = { status: StatusView } | { error: number | null };

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
    this.node.addEventListener('click', () => {
      this.openPopup();
    });
    this.poll = new Poll({
      auto: true,
      factory: () => this.refresh(),
      frequency: { interval: POLL_MS, backoff: false },
      linger: 0,
      name: 'gpulens:status',
      standby: 'when-hidden',
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
      this.node.textContent = this.reading.status.text;
      this.node.title = this.reading.status.title;
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

  private record(status: StatusView): void {
    for (const [index, sample] of status.samples) {
      let history = this.histories.get(index);
      if (!history) {
        history = {
          utilization: new History(HISTORY_SAMPLES),
          memory: new History(HISTORY_SAMPLES),
        };
        this.histories.set(index, history);
      }
      history.utilization.push(sample.utilization);
      history.memory.push(sample.memory);
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
  className?: string,
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
function renderDetails(
  node: HTMLElement,
  reading: Reading | null,
  histories: Map<number, GpuHistory>,
): void {
  node.replaceChildren();
  if (reading === null || 'error' in reading) {
    const title = reading === null ? null : explainStatusError(reading.error).title;
    node.appendChild(
      element('p', title ?? 'Reading the GPU status…', title ? 'gpulens-popup-error' : undefined),
    );
    return;
  }
  const status = reading.status;
  node.appendChild(element('h3', status.heading, 'gpulens-popup-title'));
  for (const text of [status.reason, status.facts]) {
    if (text) {
      node.appendChild(element('p', text, 'gpulens-popup-facts'));
    }
  }
  for (const gpu of status.gpus) {
    const section = element('section', undefined, 'gpulens-gpu');
    section.append(element('h4', gpu.heading), element('div', gpu.line));
    const history = histories.get(gpu.index);
    if (history) {
      const charts = element('div', undefined, 'gpulens-charts');
      charts.append(
        element('span', status.history.utilization),
        sparkline(history.utilization.values(), `${gpu.heading}: ${status.history.utilization}`),
        element('span', status.history.memory),
        sparkline(history.memory.values(), `${gpu.heading}: ${status.history.memory}`),
      );
      section.appendChild(charts);
    }
    if (gpu.processes.length) {
      const table = element('table', undefined, 'gpulens-processes');
      for (const process of gpu.processes) {
        const row = element('tr');
        row.append(...process.map((cell) => element('td', cell)));
        table.appendChild(row);
      }
      section.appendChild(table);
    }
    if (gpu.processesNote) {
      section.appendChild(element('div', gpu.processesNote, 'gpulens-muted'));
    }
    node.appendChild(section);
  }
  node.appendChild(element('h4', status.frameworksHeading));
  for (const line of status.frameworks) {
    node.appendChild(element('div', line, 'gpulens-framework'));
  }
}

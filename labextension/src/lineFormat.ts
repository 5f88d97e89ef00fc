/**
 * What the lab draws after a profiled line and shows on its hover: the rules of
 * `format_line_costs` and `format_line_details` in `gpulens.profiler.report` (and the short
 * figures of `gpulens.profiler.units`), so a cell profiled here reads as it does in VS Code and
 * through the language server. Held by tests/lineFormat.test.ts to the strings the Python side
 * produced (extension/test/unit/fixtures/line-format.json). Pure: no DOM.
 */

import type { LineCost } from './format';

const ARROWS: Record<string, string> = { htod: '↑', dtoh: '↓', dtod: '↔' };
const DIRECTIONS: Record<string, string> = {
  htod: 'host→device',
  dtoh: 'device→host',
  dtod: 'device→device'
};
/** A kernel name longer than this is cut in the hover: C++ template names run to kilobytes. */
export const KERNEL_NAME_CHARS = 80;

/**
 * Python's `f"{x:.{digits}f}"`. toFixed rounds the exact binary value as Python does, except
 * on an exact tie, which Python rounds to even and toFixed away from zero.
 */
export function pyFixed(x: number, digits: number): string {
  if (x < 0) {
    return `-${pyFixed(-x, digits)}`;
  }
  const rounded = x.toFixed(digits);
  if (!Number.isFinite(x) || x >= 1e21) {
    return rounded;
  }
  // the exact decimal expansion of x (every double from 2^-48 up fits in 100 digits)
  const exact = x.toFixed(100);
  const point = exact.indexOf('.');
  const kept = exact.slice(0, point + (digits > 0 ? digits + 1 : 0));
  const rest = exact.slice(point + 1 + digits);
  if (!/^50*$/.test(rest)) {
    return rounded;
  }
  const last = Number(kept.replace('.', '').slice(-1));
  return last % 2 === 0 ? kept : rounded;
}

function twoFigures(value: number, units: Array<[number, string]>): string {
  for (const [index, [scale, unit]] of units.entries()) {
    const scaled = value / scale;
    if (scaled < 999.5 || index === units.length - 1) {
      return scaled < 9.95 ? `${pyFixed(scaled, 1)}${unit}` : `${pyFixed(scaled, 0)}${unit}`;
    }
  }
  throw new Error('unreachable: the last unit always returns');
}

/** 0.0087 -> "8.7 ms", 0.062 -> "62 ms", 1.4 -> "1.4 s"; 0 -> "0 ms". */
export function shortSeconds(seconds: number): string {
  if (seconds <= 0) {
    return '0 ms';
  }
  return twoFigures(seconds, [
    [1e-9, ' ns'],
    [1e-6, ' µs'],
    [1e-3, ' ms'],
    [1, ' s']
  ]);
}

/** 400_000_000 -> "400 MB", 4096 -> "4.1 KB", 200 -> "200 B" (decimal units). */
export function shortBytes(size: number): string {
  if (size < 1000) {
    return `${pyFixed(size, 0)} B`;
  }
  return twoFigures(size, [
    [1e3, ' KB'],
    [1e6, ' MB'],
    [1e9, ' GB'],
    [1e12, ' TB']
  ]);
}

/** 1400 -> "1.4k", 200 -> "200", 12_345 -> "12k", 2_000_000 -> "2M". */
export function shortCount(count: number): string {
  if (count < 1000) {
    return String(count);
  }
  return twoFigures(count, [
    [1e3, 'k'],
    [1e6, 'M'],
    [1e9, 'G']
  ]).replace(/\.0/g, '');
}

function plural(count: number, word: string): string {
  return `${shortCount(count)} ${word}${count === 1 ? '' : 's'}`;
}

function madeDeviceWork(line: LineCost): boolean {
  return (
    line.kernels.count > 0 ||
    Object.values(line.transfers).some(block => block.count > 0) ||
    line.memsets.count > 0 ||
    line.syncs.count > 0
  );
}

/**
 * The text after a profiled line: "1.4k kernels · 8.7 ms GPU · ↑400 MB 62 ms · ⏸200 2.2 ms";
 * a line that made no GPU work: "200 hits · 51 ms host".
 */
export function lineCosts(line: LineCost): string {
  if (!madeDeviceWork(line)) {
    return `${plural(line.hits, 'hit')} · ${shortSeconds(line.host_s)} host`;
  }
  const parts: string[] = [];
  if (line.kernels.count > 0) {
    parts.push(plural(line.kernels.count, 'kernel'), `${shortSeconds(line.kernels.gpu_s)} GPU`);
  }
  for (const [direction, block] of Object.entries(line.transfers)) {
    if (block.count > 0) {
      parts.push(`${ARROWS[direction] ?? direction}${shortBytes(block.bytes)} ${shortSeconds(block.s)}`);
    }
  }
  if (line.memsets.count > 0) {
    parts.push(`${plural(line.memsets.count, 'memset')} ${shortSeconds(line.memsets.s)}`);
  }
  if (line.syncs.count > 0) {
    parts.push(`⏸${shortCount(line.syncs.count)} ${shortSeconds(line.syncs.stall_s)}`);
  }
  return parts.join(' · ');
}

/** Plain text safe inside Markdown, tables too: only what would change the rendering. */
export function markdownText(text: string): string {
  return text.replace(/[\\`*_[\]<>|]/g, char => `\\${char}`);
}

function kernelName(name: string): string {
  const chars = [...name];
  const cut = chars.length > KERNEL_NAME_CHARS ? `${chars.slice(0, KERNEL_NAME_CHARS - 1).join('')}…` : name;
  return `\`${cut.replace(/`/g, "'").replace(/\|/g, '¦')}\``;
}

/** Markdown for the hover of a profiled line: runs, kernels (top ones in a table), copies, memsets, syncs, hints. */
export function lineDetails(line: LineCost, backend?: string | null): string {
  let head = `**gpulens profile** · line ${line.line}`;
  if (backend) {
    head += ` · ${markdownText(backend)} backend`;
  }
  const out = [head, '', `- ran ${plural(line.hits, 'time')} · ${shortSeconds(line.host_s)} on the host`];
  if (line.kernels.count > 0) {
    out.push(`- ${plural(line.kernels.count, 'kernel')} · ${shortSeconds(line.kernels.gpu_s)} on the GPU`);
  }
  for (const [direction, block] of Object.entries(line.transfers)) {
    if (!block.count) {
      continue;
    }
    let text =
      `- ${ARROWS[direction] ?? ''} ${DIRECTIONS[direction] ?? direction}: ` +
      `${block.count} cop${block.count === 1 ? 'y' : 'ies'} · ${shortBytes(block.bytes)} · ${shortSeconds(block.s)}`;
    if (block.bytes && block.s > 0) {
      text += ` · ${pyFixed(block.bytes / block.s / 1e9, 1)} GB/s`;
    }
    if (block.pageable) {
      text += ` · ${block.pageable} from pageable memory`;
    }
    out.push(text);
  }
  if (line.memsets.count > 0) {
    out.push(
      `- ${plural(line.memsets.count, 'memset')} · ${shortBytes(line.memsets.bytes)} · ${shortSeconds(line.memsets.s)}`
    );
  }
  if (line.syncs.count > 0) {
    out.push(
      `- ⏸ the host waited for the GPU ${plural(line.syncs.count, 'time')} · ${shortSeconds(line.syncs.stall_s)} stalled`
    );
  }
  if (line.kernels.top.length > 0) {
    out.push('', '| top kernels | launches | GPU time |', '|---|---:|---:|');
    for (const kernel of line.kernels.top) {
      out.push(`| ${kernelName(kernel.name)} | ${shortCount(kernel.count)} | ${shortSeconds(kernel.gpu_s)} |`);
    }
  }
  for (const hint of line.hints) {
    out.push('', `💡 ${markdownText(hint)}`);
  }
  return out.join('\n');
}

// -- the hover's Markdown, as blocks the DOM draws ----------------------------------------------
// Only what `lineDetails` writes: paragraphs, a bullet list, one table; **strong**, `code` and
// backslash escapes inline.

export interface Inline {
  text: string;
  strong?: boolean;
  code?: boolean;
}

export type Align = 'left' | 'right' | 'center' | null;

export type Block =
  | { kind: 'paragraph'; content: Inline[] }
  | { kind: 'list'; items: Inline[][] }
  | { kind: 'table'; head: Inline[][]; align: Align[]; rows: Inline[][][] };

/** Inline Markdown: `\x` is x, `**…**` strong, `` `…` `` code (its content as written). */
export function inlines(text: string): Inline[] {
  const out: Inline[] = [];
  let strong = false;
  let plain = '';
  const flush = (): void => {
    if (plain) {
      out.push(strong ? { text: plain, strong } : { text: plain });
      plain = '';
    }
  };
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '\\' && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1]!)) {
      plain += text[++i];
    } else if (char === '*' && text[i + 1] === '*') {
      flush();
      strong = !strong;
      i++;
    } else if (char === '`' && text.indexOf('`', i + 1) > i) {
      flush();
      const end = text.indexOf('`', i + 1);
      const code = text.slice(i + 1, end);
      out.push(strong ? { text: code, code: true, strong } : { text: code, code: true });
      i = end;
    } else {
      plain += char;
    }
  }
  flush();
  return out;
}

/** A table row's cells: split at the `|`s outside code spans and escapes. */
function cells(row: string): string[] {
  const body = row.trim().replace(/^\|/, '').replace(/\|$/, '');
  const out: string[] = [];
  let cell = '';
  let code = false;
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (char === '\\' && !code && i + 1 < body.length) {
      cell += char + body[++i];
    } else if (char === '`') {
      code = !code;
      cell += char;
    } else if (char === '|' && !code) {
      out.push(cell.trim());
      cell = '';
    } else {
      cell += char;
    }
  }
  out.push(cell.trim());
  return out;
}

function alignOf(cell: string): Align {
  const left = cell.startsWith(':');
  const right = cell.endsWith(':');
  return left && right ? 'center' : right ? 'right' : left ? 'left' : null;
}

/** The blocks of the hover's Markdown, in order. */
export function markdownBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const rows = markdown.split('\n');
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (!row.trim()) {
      continue;
    }
    if (row.startsWith('- ')) {
      const items: Inline[][] = [];
      while (i < rows.length && rows[i]!.startsWith('- ')) {
        items.push(inlines(rows[i++]!.slice(2)));
      }
      i--;
      blocks.push({ kind: 'list', items });
    } else if (row.startsWith('|') && /^\|[\s|:-]+\|$/.test(rows[i + 1] ?? '')) {
      const head = cells(row).map(inlines);
      const align = cells(rows[i + 1]!).map(alignOf);
      const body: Inline[][][] = [];
      for (i += 2; i < rows.length && rows[i]!.startsWith('|'); i++) {
        body.push(cells(rows[i]!).map(inlines));
      }
      i--;
      blocks.push({ kind: 'table', head, align, rows: body });
    } else {
      blocks.push({ kind: 'paragraph', content: inlines(row) });
    }
  }
  return blocks;
}

/** The text a reader sees of some inline runs. */
export function inlineText(content: Inline[]): string {
  return content.map(part => part.text).join('');
}

/**
 * What an editor draws after a profiled line, shows on its hover and says when a run stops:
 * a mirror of `format_line_costs`, `format_line_details` and `format_run_message` in
 * `gpulens.profiler.report`, so a cell profiled in a notebook kernel (drawn here) reads like one
 * profiled through the language server (drawn by the server's inlay hints). The unit tests hold
 * these to strings the Python side produced (test/unit/fixtures/line-format.json). Pure.
 */

import type { LineCost, Profile, Transfer } from './profile';

const ARROWS: Record<Transfer['direction'], string> = { htod: '↑', dtoh: '↓', dtod: '↔' };
const DIRECTIONS: Record<Transfer['direction'], string> = {
  htod: 'host→device',
  dtoh: 'device→host',
  dtod: 'device→device',
};
/** A kernel name longer than this is cut in the hover: C++ template names run to kilobytes. */
export const KERNEL_NAME_CHARS = 80;

/** Python's `f"{x:.{digits}f}"`: like toFixed, but an exact tie rounds to even. */
export function pyFixed(x: number, digits: number): string {
  if (x < 0) {
    return `-${pyFixed(-x, digits)}`;
  }
  const rounded = x.toFixed(digits);
  if (!Number.isFinite(x) || x >= 1e21) {
    return rounded;
  }
  // only an exact tie in the binary value differs (Python rounds it to even): look at the
  // exact decimal expansion, since 4.35 is really 4.3499999… and is no tie at all
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
  if (seconds <= 0) return '0 ms';
  return twoFigures(seconds, [
    [1e-9, ' ns'],
    [1e-6, ' µs'],
    [1e-3, ' ms'],
    [1, ' s'],
  ]);
}

/** 400_000_000 -> "400 MB", 4096 -> "4.1 KB", 200 -> "200 B" (decimal units). */
export function shortBytes(size: number): string {
  if (size < 1000) return `${pyFixed(size, 0)} B`;
  return twoFigures(size, [
    [1e3, ' KB'],
    [1e6, ' MB'],
    [1e9, ' GB'],
    [1e12, ' TB'],
  ]);
}

/** 1400 -> "1.4k", 200 -> "200", 12_345 -> "12k", 2_000_000 -> "2M". */
export function shortCount(count: number): string {
  if (count < 1000) return String(count);
  return twoFigures(count, [
    [1e3, 'k'],
    [1e6, 'M'],
    [1e9, 'G'],
  ]).replace(/\.0/g, '');
}

function plural(count: number, word: string): string {
  return `${shortCount(count)} ${word}${count === 1 ? '' : 's'}`;
}

function madeDeviceWork(line: LineCost): boolean {
  return line.kernelCount > 0 || line.transfers.some((t) => t.count > 0) || line.memsetCount > 0 || line.syncCount > 0;
}

/** "1.4k kernels · 8.7 ms GPU · ↑400 MB 62 ms · ⏸200 2.2 ms"; a host-only line: "200 hits · 51 ms host". */
export function lineCosts(line: LineCost): string {
  if (!madeDeviceWork(line)) return `${plural(line.hits, 'hit')} · ${shortSeconds(line.hostS)} host`;
  const parts: string[] = [];
  if (line.kernelCount > 0) parts.push(plural(line.kernelCount, 'kernel'), `${shortSeconds(line.kernelS)} GPU`);
  for (const t of line.transfers) {
    if (t.count > 0) parts.push(`${ARROWS[t.direction]}${shortBytes(t.bytes)} ${shortSeconds(t.s)}`);
  }
  if (line.memsetCount > 0) parts.push(`${plural(line.memsetCount, 'memset')} ${shortSeconds(line.memsetS)}`);
  if (line.syncCount > 0) parts.push(`⏸${shortCount(line.syncCount)} ${shortSeconds(line.stallS)}`);
  return parts.join(' · ');
}

/** Plain text safe inside Markdown, tables too. */
export function markdownText(text: string): string {
  return text.replace(/[\\`*_[\]<>|]/g, (c) => `\\${c}`);
}

function kernelName(name: string): string {
  const chars = [...name];
  const cut = chars.length > KERNEL_NAME_CHARS ? `${chars.slice(0, KERNEL_NAME_CHARS - 1).join('')}…` : name;
  return `\`${cut.replace(/`/g, "'").replace(/\|/g, '¦')}\``;
}

/** Markdown for the hover of a profiled line: runs, kernels (top ones in a table), copies, memsets, syncs, hints. */
export function lineDetails(line: LineCost, backend?: string): string {
  let head = `**gpulens profile** · line ${line.line}`;
  if (backend) head += ` · ${markdownText(backend)} backend`;
  const out = [head, '', `- ran ${plural(line.hits, 'time')} · ${shortSeconds(line.hostS)} on the host`];
  if (line.kernelCount > 0) out.push(`- ${plural(line.kernelCount, 'kernel')} · ${shortSeconds(line.kernelS)} on the GPU`);
  for (const t of line.transfers) {
    if (t.count === 0) continue;
    let text = `- ${ARROWS[t.direction]} ${DIRECTIONS[t.direction]}: ${t.count} cop${t.count === 1 ? 'y' : 'ies'} · ${shortBytes(t.bytes)} · ${shortSeconds(t.s)}`;
    if (t.bytes && t.s > 0) text += ` · ${pyFixed(t.bytes / t.s / 1e9, 1)} GB/s`;
    if (t.pageable) text += ` · ${t.pageable} from pageable memory`;
    out.push(text);
  }
  if (line.memsetCount > 0) {
    out.push(`- ${plural(line.memsetCount, 'memset')} · ${shortBytes(line.memsetBytes)} · ${shortSeconds(line.memsetS)}`);
  }
  if (line.syncCount > 0) {
    out.push(`- ⏸ the host waited for the GPU ${plural(line.syncCount, 'time')} · ${shortSeconds(line.stallS)} stalled`);
  }
  if (line.topKernels.length > 0) {
    out.push('', '| top kernels | launches | GPU time |', '|---|---:|---:|');
    for (const k of line.topKernels) out.push(`| ${kernelName(k.name)} | ${shortCount(k.count)} | ${shortSeconds(k.gpuS)} |`);
  }
  for (const hint of line.hints) out.push('', `💡 ${markdownText(hint)}`);
  return out.join('\n');
}

function runName(profile: Profile): string {
  const name = (profile.path ?? 'the file').replace(/\\/g, '/').split('/').pop() ?? 'the file';
  if (profile.cell === undefined) return name;
  return profile.cell === 0 ? `the code before the first cell of ${name}` : `cell ${profile.cell} of ${name}`;
}

/** One sentence when a profile did not run to the end (or ran nothing); undefined when it went well. */
export function runMessage(profile: Profile): string | undefined {
  const where = runName(profile);
  const ran = profile.lines.length > 0;
  const shown = ran ? ' The costs of the lines that ran are shown.' : '';
  const error = profile.error;
  if (!error) return ran ? undefined : `gpulens: ${where} ran no code; put the cursor in a \`# %%\` cell with code.`;
  const message = error.message.replace(/[. ]+$/, '');
  const at = error.line ? ` at line ${error.line}` : '';
  switch (error.type) {
    case 'Timeout':
      return `gpulens: profiling ${where} stopped: ${message}.${shown}`;
    case 'Cancelled':
      return `gpulens: profiling ${where} was cancelled.${shown}`;
    case 'InterpreterError':
    case 'InterpreterExit':
    case 'SetupError':
    case 'RequestError':
      return `gpulens: ${where} was not profiled: ${message}.`;
    case 'SyntaxError':
      return `gpulens: ${where} has a syntax error (${message}); fix it and profile again.`;
    default:
      return `gpulens: ${where} raised ${error.type}${at}: ${message}.${shown} Fix it and profile again.`;
  }
}

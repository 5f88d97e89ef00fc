/**
 * Findings drawn in a cell editor (CodeMirror 6): a light underline with the Python side's hover
 * text, and a light bulb at the end of each line that has a fix. Where jupyterlab-lsp draws the
 * diagnostics itself, only the bulbs are drawn. Any edit of the cell clears the marks until the
 * next analysis draws them again.
 */

import { type Extension, type Range, StateEffect, StateField } from '@codemirror/state';
import {
  Decoration,
  type DecorationSet,
  EditorView,
  hoverTooltip,
  WidgetType,
} from '@codemirror/view';

export interface FindingMark {
  /** Offsets in the cell's text. */
  from: number;
  to: number;
  severity: string;
  hover: string;
  /** Whether the finding has a fix: its line gets a bulb. */
  fixable: boolean;
}

export interface MarkOptions {
  /** Underline the findings and show their hover (false: another extension draws them). */
  underline: boolean;
  /** Called with the 1-based line number when that line's bulb is clicked. */
  openFixes: (line: number, anchor: HTMLElement) => void;
  /** The bulb's tooltip (words of the Python side). */
  bulbTitle: string;
}

interface MarkState {
  marks: FindingMark[];
  options: MarkOptions | null;
  decorations: DecorationSet;
}

const SVG = 'http://www.w3.org/2000/svg';

/** A light bulb drawn in the theme's warning colour (no emoji font needed). */
function bulbIcon(): SVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '14');
  svg.setAttribute('height', '14');
  const glass = document.createElementNS(SVG, 'path');
  glass.setAttribute('d', 'M8 1a5 5 0 0 0-3 9c.6.5 1 1.2 1 2h4c0-.8.4-1.5 1-2a5 5 0 0 0-3-9z');
  glass.setAttribute('class', 'gpulens-bulb-glass');
  const base = document.createElementNS(SVG, 'path');
  base.setAttribute('d', 'M6 13h4v1.2a.8.8 0 0 1-.8.8H6.8a.8.8 0 0 1-.8-.8z');
  base.setAttribute('class', 'gpulens-bulb-base');
  svg.append(glass, base);
  return svg;
}

class BulbWidget extends WidgetType {
  constructor(
    readonly line: number,
    readonly options: MarkOptions,
  ) {
    super();
  }

  override eq(other: BulbWidget): boolean {
    return other.line === this.line && other.options === this.options;
  }

  toDOM(): HTMLElement {
    const bulb = document.createElement('button');
    bulb.className = 'gpulens-bulb';
    bulb.type = 'button';
    bulb.dataset.line = String(this.line);
    bulb.title = this.options.bulbTitle;
    bulb.append(bulbIcon());
    bulb.addEventListener('mousedown', (event) => {
      event.preventDefault();
    });
    bulb.addEventListener('click', (event) => {
      event.preventDefault();
      event.stopPropagation();
      this.options.openFixes(this.line, bulb);
    });
    return bulb;
  }

  override ignoreEvent(): boolean {
    return true;
  }
}

function decorationsFor(
  marks: FindingMark[],
  options: MarkOptions,
  view: { doc: EditorView['state']['doc'] },
): DecorationSet {
  const ranges: Range<Decoration>[] = [];
  const bulbLines = new Set<number>();
  const length = view.doc.length;
  for (const mark of marks) {
    const from = Math.min(mark.from, length);
    const to = Math.min(Math.max(mark.to, from), length);
    if (options.underline && to > from) {
      ranges.push(
        Decoration.mark({ class: `gpulens-finding gpulens-finding-${mark.severity}` }).range(
          from,
          to,
        ),
      );
    }
    if (mark.fixable) {
      bulbLines.add(view.doc.lineAt(from).number);
    }
  }
  for (const number of bulbLines) {
    const line = view.doc.line(number);
    ranges.push(
      Decoration.widget({ widget: new BulbWidget(number, options), side: 2 }).range(line.to),
    );
  }
  return Decoration.set(ranges, true);
}

const setMarks = StateEffect.define<{ marks: FindingMark[]; options: MarkOptions }>();

const EMPTY: MarkState = { marks: [], options: null, decorations: Decoration.none };

const markField = StateField.define<MarkState>({
  create: () => EMPTY,
  update(value, transaction) {
    for (const effect of transaction.effects) {
      if (effect.is(setMarks)) {
        const { marks, options } = effect.value;
        return { marks, options, decorations: decorationsFor(marks, options, transaction.state) };
      }
    }
    // the findings describe the text that was analysed: an edit makes them stale
    return transaction.docChanged ? EMPTY : value;
  },
  provide: (field) => EditorView.decorations.from(field, (state) => state.decorations),
});

const findingHover = hoverTooltip((view, pos) => {
  const state = view.state.field(markField, false);
  if (!state?.options?.underline) {
    return null;
  }
  const here = state.marks.filter(
    (mark) => mark.from <= pos && pos <= mark.to && mark.to > mark.from,
  );
  if (here.length === 0) {
    return null;
  }
  return {
    pos: Math.min(...here.map((mark) => mark.from)),
    end: Math.max(...here.map((mark) => mark.to)),
    above: true,
    create: () => {
      const dom = document.createElement('div');
      dom.className = 'gpulens-finding-hover';
      for (const mark of here) {
        const entry = document.createElement('div');
        entry.textContent = mark.hover;
        dom.append(entry);
      }
      return { dom };
    },
  };
});

/** The editor extensions that hold and draw the findings. */
export const findingExtension: Extension = [markField, findingHover];

/** Draws `marks` in `view`, replacing what was there; an empty list clears. */
export function showFindings(view: EditorView, marks: FindingMark[], options: MarkOptions): void {
  if (!view.state.field(markField, false)) {
    if (marks.length === 0) {
      return;
    }
    view.dispatch({ effects: StateEffect.appendConfig.of(findingExtension) });
  }
  view.dispatch({ effects: setMarks.of({ marks, options }) });
}

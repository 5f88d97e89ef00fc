/**
 * Per-line costs drawn at the end of a cell editor's lines (CodeMirror 6 decorations): each
 * line's label and hover as the payload words them, the line tinted by its heat. The hover's
 * Markdown is rendered by JupyterLab's own Markdown renderer (sanitized, as untrusted output
 * is). The costs live in a state field of the editor; any edit of the cell clears them.
 */

import { type Extension, StateEffect, StateField, type Range } from '@codemirror/state';
import { Decoration, type DecorationSet, EditorView, WidgetType } from '@codemirror/view';

import { editorLine, type ProfiledLine } from './payloads';

/** Renders Markdown into `host` (JupyterLab's renderer, see index.ts). */
export type MarkdownRenderer = (markdown: string, host: HTMLElement) => Promise<void>;

interface LineMark {
  /** 1-based editor line. */
  line: number;
  hits: number;
  heat: number;
  label: string;
  /** Markdown. */
  hover: string;
}

class CostWidget extends WidgetType {
  private hover: HTMLElement | null = null;

  constructor(
    readonly mark: LineMark,
    readonly renderMarkdown: MarkdownRenderer,
  ) {
    super();
  }

  override eq(other: CostWidget): boolean {
    return (
      other.mark.label === this.mark.label &&
      other.mark.heat === this.mark.heat &&
      other.mark.hover === this.mark.hover
    );
  }

  toDOM(): HTMLElement {
    const node = document.createElement('span');
    node.className = 'gpulens-cost';
    node.dataset.line = String(this.mark.line);
    node.dataset.hits = String(this.mark.hits);
    node.style.setProperty('--gpulens-heat', String(this.mark.heat));
    const label = document.createElement('span');
    label.className = 'gpulens-cost-label';
    label.textContent = this.mark.label;
    node.append(label);
    const hover = document.createElement('div');
    hover.className = 'gpulens-cost-hover';
    let rendered: Promise<void> | null = null;
    // the hover lives in the page's body while shown: the notebook's scrolling and
    // containment would clip it or shift a fixed position inside the editor
    node.addEventListener('mouseenter', () => {
      rendered ??= this.renderMarkdown(this.mark.hover, hover);
      document.body.appendChild(hover);
      void rendered.then(() => {
        const box = node.getBoundingClientRect();
        hover.style.left = `${Math.max(4, Math.min(box.left, window.innerWidth - hover.offsetWidth - 8))}px`;
        hover.style.top = `${box.bottom + 2}px`;
      });
    });
    node.addEventListener('mouseleave', () => {
      hover.remove();
    });
    this.hover = hover;
    return node;
  }

  override destroy(): void {
    this.hover?.remove();
  }

  override ignoreEvent(): boolean {
    return true;
  }
}

const setCosts = StateEffect.define<{ marks: LineMark[]; renderMarkdown: MarkdownRenderer }>();

function decorationsFor(
  marks: LineMark[],
  renderMarkdown: MarkdownRenderer,
  view: { doc: EditorView['state']['doc'] },
): DecorationSet {
  const ranges: Range<Decoration>[] = [];
  for (const mark of [...marks].sort((a, b) => a.line - b.line)) {
    if (mark.line < 1 || mark.line > view.doc.lines) {
      continue;
    }
    const line = view.doc.line(mark.line);
    ranges.push(
      Decoration.line({
        class: 'gpulens-line',
        attributes: { style: `--gpulens-heat: ${mark.heat}` },
      }).range(line.from),
    );
    ranges.push(
      Decoration.widget({ widget: new CostWidget(mark, renderMarkdown), side: 1 }).range(line.to),
    );
  }
  return Decoration.set(ranges, true);
}

const costField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(value, transaction) {
    for (const effect of transaction.effects) {
      if (effect.is(setCosts)) {
        return decorationsFor(effect.value.marks, effect.value.renderMarkdown, transaction.state);
      }
    }
    // the costs describe the source that ran: an edit makes them stale
    return transaction.docChanged ? Decoration.none : value;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/** The editor extension that holds and draws the costs. */
export const costExtension: Extension = costField;

/** The marks of a payload's lines, for a cell whose source does (or does not) start with `%%gpulens`. */
export function marksFor(lines: ProfiledLine[], sourceHasMagicLine: boolean): LineMark[] {
  return lines.map((line) => ({
    line: editorLine(line.line, sourceHasMagicLine),
    hits: line.hits,
    heat: line.heat,
    label: line.label,
    hover: line.hover,
  }));
}

/** Draws `marks` in `view`, replacing what was there; an empty list clears. */
export function showCosts(
  view: EditorView,
  marks: LineMark[],
  renderMarkdown: MarkdownRenderer,
): void {
  if (!view.state.field(costField, false)) {
    if (marks.length === 0) {
      return;
    }
    view.dispatch({ effects: StateEffect.appendConfig.of(costField) });
  }
  view.dispatch({ effects: setCosts.of({ marks, renderMarkdown }) });
}

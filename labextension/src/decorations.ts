/**
 * Per-line costs drawn at the end of a cell editor's lines (CodeMirror 6 decorations).
 * The costs live in a state field of the editor; any edit of the cell clears them.
 */

import { type Extension, StateEffect, StateField, type Range } from '@codemirror/state';
import { Decoration, type DecorationSet, EditorView, WidgetType } from '@codemirror/view';

import {
  editorLine,
  formatLineAnnotation,
  formatLineHover,
  heatByLine,
  type LineCost,
  type ProfilePayload
} from './format';

interface LineMark {
  /** 1-based editor line. */
  line: number;
  heat: number;
  text: string;
  hover: string[];
}

class CostWidget extends WidgetType {
  private hover: HTMLElement | null = null;

  constructor(readonly mark: LineMark) {
    super();
  }

  override eq(other: CostWidget): boolean {
    return (
      other.mark.text === this.mark.text &&
      other.mark.heat === this.mark.heat &&
      other.mark.hover.join('\n') === this.mark.hover.join('\n')
    );
  }

  toDOM(): HTMLElement {
    const node = document.createElement('span');
    node.className = 'gpulens-cost';
    node.dataset.line = String(this.mark.line);
    node.style.setProperty('--gpulens-heat', this.mark.heat.toFixed(3));
    const label = document.createElement('span');
    label.className = 'gpulens-cost-label';
    label.textContent = this.mark.text;
    const hover = document.createElement('span');
    hover.className = 'gpulens-cost-hover';
    for (const row of this.mark.hover) {
      const item = document.createElement('div');
      item.textContent = row;
      hover.appendChild(item);
    }
    node.append(label);
    // the hover lives in the page's body while shown: the notebook's scrolling and
    // containment would clip it or shift a fixed position inside the editor
    node.addEventListener('mouseenter', () => {
      document.body.appendChild(hover);
      const box = node.getBoundingClientRect();
      const width = hover.offsetWidth;
      hover.style.left = `${Math.max(4, Math.min(box.left, window.innerWidth - width - 8))}px`;
      hover.style.top = `${box.bottom + 2}px`;
    });
    node.addEventListener('mouseleave', () => hover.remove());
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

const setCosts = StateEffect.define<LineMark[]>();

function decorationsFor(marks: LineMark[], view: { doc: EditorView['state']['doc'] }): DecorationSet {
  const ranges: Range<Decoration>[] = [];
  for (const mark of [...marks].sort((a, b) => a.line - b.line)) {
    if (mark.line < 1 || mark.line > view.doc.lines) {
      continue;
    }
    const line = view.doc.line(mark.line);
    ranges.push(
      Decoration.line({
        class: 'gpulens-line',
        attributes: { style: `--gpulens-heat: ${mark.heat.toFixed(3)}` }
      }).range(line.from)
    );
    ranges.push(Decoration.widget({ widget: new CostWidget(mark), side: 1 }).range(line.to));
  }
  return Decoration.set(ranges, true);
}

const costField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(value, transaction) {
    for (const effect of transaction.effects) {
      if (effect.is(setCosts)) {
        return decorationsFor(effect.value, transaction.state);
      }
    }
    // the costs describe the source that ran: an edit makes them stale
    return transaction.docChanged ? Decoration.none : value;
  },
  provide: field => EditorView.decorations.from(field)
});

/** The editor extension that holds and draws the costs. */
export const costExtension: Extension = costField;

/** The marks of a payload for a cell whose source does (or does not) start with `%%gpulens`. */
export function marksFor(payload: ProfilePayload, sourceHasMagicLine: boolean): LineMark[] {
  const heat = heatByLine(payload);
  return payload.lines
    .filter((line: LineCost) => line.hits > 0 || line.kernels.count > 0)
    .map((line: LineCost) => ({
      line: editorLine(line.line, sourceHasMagicLine),
      heat: heat.get(line.line) ?? 0,
      text: formatLineAnnotation(line),
      hover: formatLineHover(line)
    }));
}

/** Draws `marks` in `view`, replacing what was there; an empty list clears. */
export function showCosts(view: EditorView, marks: LineMark[]): void {
  if (!view.state.field(costField, false)) {
    if (marks.length === 0) {
      return;
    }
    view.dispatch({ effects: StateEffect.appendConfig.of(costField) });
  }
  view.dispatch({ effects: setCosts.of(marks) });
}

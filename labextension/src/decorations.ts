/**
 * Per-line costs drawn at the end of a cell editor's lines (CodeMirror 6 decorations): the
 * label and hover of the Python side (`format_line_costs`, `format_line_details`), the line
 * tinted by its share of the cell's cost. The costs live in a state field of the editor; any
 * edit of the cell clears them.
 */

import { type Extension, StateEffect, StateField, type Range } from '@codemirror/state';
import { Decoration, type DecorationSet, EditorView, WidgetType } from '@codemirror/view';

import { editorLine, heatByLine, type LineCost, type ProfilePayload } from './format';
import { type Align, type Block, type Inline, lineCosts, lineDetails, markdownBlocks } from './lineFormat';

interface LineMark {
  /** 1-based editor line. */
  line: number;
  hits: number;
  heat: number;
  /** `format_line_costs` of the line. */
  text: string;
  /** `format_line_details` of the line: Markdown, drawn as HTML in the hover. */
  details: string;
}

function inlineNodes(parent: HTMLElement, content: Inline[]): void {
  for (const part of content) {
    let node: Node = document.createTextNode(part.text);
    if (part.code) {
      const code = document.createElement('code');
      code.style.fontFamily = 'var(--jp-code-font-family)';
      code.append(node);
      node = code;
    }
    if (part.strong) {
      const strong = document.createElement('strong');
      strong.append(node);
      node = strong;
    }
    parent.append(node);
  }
}

function cellNode(tag: 'th' | 'td', content: Inline[], align: Align | undefined, column: number): HTMLElement {
  const node = document.createElement(tag);
  node.style.padding = column === 0 ? '0' : '0 0 0 12px';
  node.style.textAlign = align ?? 'left';
  inlineNodes(node, content);
  return node;
}

/** The hover's Markdown as DOM: paragraphs, the list of figures, the top-kernels table. */
function blockNodes(blocks: Block[]): HTMLElement[] {
  return blocks.map(block => {
    if (block.kind === 'list') {
      const list = document.createElement('ul');
      list.style.margin = '4px 0';
      list.style.paddingLeft = '1.4em';
      for (const item of block.items) {
        const node = document.createElement('li');
        inlineNodes(node, item);
        list.append(node);
      }
      return list;
    }
    if (block.kind === 'table') {
      const table = document.createElement('table');
      table.style.borderCollapse = 'collapse';
      table.style.margin = '4px 0';
      const head = document.createElement('tr');
      block.head.forEach((content, i) => head.append(cellNode('th', content, block.align[i], i)));
      const thead = document.createElement('thead');
      thead.append(head);
      const tbody = document.createElement('tbody');
      for (const row of block.rows) {
        const tr = document.createElement('tr');
        row.forEach((content, i) => tr.append(cellNode('td', content, block.align[i], i)));
        tbody.append(tr);
      }
      table.append(thead, tbody);
      return table;
    }
    const paragraph = document.createElement('div');
    paragraph.style.margin = '2px 0';
    // hints are sentences: they wrap at the hover's width
    paragraph.style.whiteSpace = 'pre-wrap';
    inlineNodes(paragraph, block.content);
    return paragraph;
  });
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
      other.mark.details === this.mark.details
    );
  }

  toDOM(): HTMLElement {
    const node = document.createElement('span');
    node.className = 'gpulens-cost';
    node.dataset.line = String(this.mark.line);
    node.dataset.hits = String(this.mark.hits);
    node.style.setProperty('--gpulens-heat', this.mark.heat.toFixed(3));
    const label = document.createElement('span');
    label.className = 'gpulens-cost-label';
    label.textContent = this.mark.text;
    const hover = document.createElement('div');
    hover.className = 'gpulens-cost-hover';
    hover.append(...blockNodes(markdownBlocks(this.mark.details)));
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
      hits: line.hits,
      heat: heat.get(line.line) ?? 0,
      text: lineCosts(line),
      details: lineDetails(line, payload.backend)
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

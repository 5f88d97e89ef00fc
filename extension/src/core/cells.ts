/**
 * Where the `# %%` cells of a script start, to put a "Profile cell" lens above each one when
 * the language server offers no code lenses itself. Mirrors `gpulens.profiler.cells._MARKER`
 * (VS Code, Jupytext and Spyder markers); the server decides what a cell holds.
 */

const MARKER = /^\s*#\s*(%%|In\[\s*\d*\s*\]:)/;
const MARKDOWN = /^\s*#\s*%%.*\[(markdown|md)\]/i;

/** 0-based lines of the code cells' markers. */
export function codeCellStarts(text: string): number[] {
  const starts: number[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (MARKER.test(line) && !MARKDOWN.test(line)) starts.push(index);
  });
  return starts;
}

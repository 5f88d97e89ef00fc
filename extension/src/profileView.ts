/**
 * Per-line costs of a profiled cell: the label the server wrote at the end of each line, its
 * hover, and a tint by the line's heat. Results stay until cleared or until the document is
 * edited.
 */

import * as vscode from 'vscode';
import { HEAT_LEVELS, heatAlpha, lineMarks, type Profile } from './core/profile';

const CONTEXT_KEY = 'gpulens.hasProfileResults';

interface Shown {
  profile: Profile;
  /** Lines to subtract from the payload's line numbers (1 for a cell run under an added `%%gpulens`). */
  offset: number;
  /** False when the language server draws the text itself (inlay hints and hover): tint only. */
  withText: boolean;
}

export class ProfileView implements vscode.Disposable {
  /** document URI -> (cell key -> result); several cells of one file can be shown at once. */
  private readonly results = new Map<string, Map<string, Shown>>();
  private readonly heat: vscode.TextEditorDecorationType[] = [];
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor() {
    for (let level = 0; level <= HEAT_LEVELS; level += 1) {
      const alpha = heatAlpha(level);
      this.heat.push(
        vscode.window.createTextEditorDecorationType({
          isWholeLine: true,
          backgroundColor: alpha > 0 ? `rgba(255, 90, 31, ${alpha})` : undefined,
          overviewRulerColor:
            alpha > 0 ? `rgba(255, 90, 31, ${Math.min(1, alpha * 2)})` : undefined,
          overviewRulerLane: vscode.OverviewRulerLane.Right,
          rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
        }),
      );
    }
    this.subscriptions.push(
      ...this.heat,
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        editors.forEach((e) => {
          this.render(e);
        });
      }),
      vscode.workspace.onDidChangeTextDocument((event) => {
        // the numbers belong to the code as it ran; an edit makes them point at other lines
        if (event.contentChanges.length > 0 && this.results.has(event.document.uri.toString())) {
          this.clear(event.document.uri);
        }
      }),
      vscode.workspace.onDidCloseTextDocument((document) => {
        if (document.uri.scheme === 'vscode-notebook-cell') return; // cells close when scrolled away
        this.results.delete(document.uri.toString());
        this.updateContext();
      }),
    );
  }

  /** The documents that show results now. */
  documents(): vscode.Uri[] {
    return [...this.results.keys()].map((id) => vscode.Uri.parse(id));
  }

  show(uri: vscode.Uri, key: string, profile: Profile, offset: number, withText = true): void {
    const id = uri.toString();
    const shown = this.results.get(id) ?? new Map<string, Shown>();
    shown.set(key, { profile, offset, withText });
    this.results.set(id, shown);
    this.updateContext();
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() === id) this.render(editor);
    }
  }

  /** Clears one document's results, or every document's. */
  clear(uri?: vscode.Uri): void {
    if (uri) this.results.delete(uri.toString());
    else this.results.clear();
    this.updateContext();
    for (const editor of vscode.window.visibleTextEditors) {
      if (!uri || editor.document.uri.toString() === uri.toString()) this.render(editor);
    }
  }

  private updateContext(): void {
    void vscode.commands.executeCommand('setContext', CONTEXT_KEY, this.results.size > 0);
  }

  private render(editor: vscode.TextEditor): void {
    const byLevel: vscode.DecorationOptions[][] = this.heat.map(() => []);
    const shown = this.results.get(editor.document.uri.toString());
    for (const { profile, offset, withText } of shown?.values() ?? []) {
      for (const mark of lineMarks(profile, offset, editor.document.lineCount)) {
        const end = editor.document.lineAt(mark.at).range.end;
        const decoration: vscode.DecorationOptions = {
          range: new vscode.Range(mark.at, 0, end.line, end.character),
        };
        if (withText) {
          decoration.hoverMessage = new vscode.MarkdownString(mark.hover);
          decoration.renderOptions = {
            after: {
              contentText: mark.label,
              color: new vscode.ThemeColor('editorInlayHint.foreground'),
              backgroundColor: new vscode.ThemeColor('editorInlayHint.background'),
              margin: '0 0 0 1.5em',
            },
          };
        }
        byLevel[mark.level].push(decoration);
      }
    }
    this.heat.forEach((type, level) => {
      editor.setDecorations(type, byLevel[level]);
    });
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  type ActionsAnswer,
  applyEdits,
  type CellChange,
  findingsBetween,
  fixesOf,
  parseAnswer,
} from '../src/actions';

const REPO = join(__dirname, '..', '..');
const PYTHON = process.env.GPULENS_PYTHON ?? join(REPO, '.venv', 'bin', 'python');

// The answer of the route's own code for these cells, and what the Python side makes of each
// action's edits (apply_edits, fix_all_cells, the refactor): the client must make the same.
const SCRIPT = `
import json
from gpulens.analysis import analyze_cells
from gpulens.analysis.edits import apply_edits
from gpulens.analysis.model import Span
from gpulens.analysis.notebook_fixes import fix_all_cells
from gpulens.analysis.refactors import refactor
from gpulens.jupyter.handlers import ProjectConfigs, answer_request

cells = [
    'import torch\\nx = torch.randn(10, device="cuda")  # 🚀\\n',
    "total = 0.0  # 🔥 hot\\nfor i in range(100):\\n    total += (x * i).sum().item()\\n",
    "import torch\\nw = torch.randn(8, 8)  # 🧮\\nm = torch.nn.Linear(8, 8)\\n",
]
to = len(cells[2].encode("utf-16-le")) // 2
body = {"cells": cells, "fix_all": True, "device": "cuda:1", "refactor": "move_to_device",
        "selection": {"cell": 2, "from": 0, "to": to}}
answer = answer_request(json.dumps(body).encode(), ProjectConfigs(None))
finding = next(f for f in analyze_cells(cells)[1].findings if f.code == "GPU001")
moved = refactor("move_to_device", cells[2], Span(0, 0, 3, 0), "cuda:1")
print(json.dumps({
    "cells": cells,
    "answer": answer,
    "fix": [cells[0], apply_edits(cells[1], finding.fixes[0].edits), cells[2]],
    "fix_all": fix_all_cells(cells),
    "refactor": [cells[0], cells[1], apply_edits(cells[2], moved.edits)],
}))
`;

interface Generated {
  cells: string[];
  answer: unknown;
  fix: string[];
  fix_all: string[];
  refactor: string[];
}

function generate(): Generated {
  if (!existsSync(PYTHON)) {
    throw new Error(`no Python at ${PYTHON}: run \`make\` first or set GPULENS_PYTHON`);
  }
  return JSON.parse(execFileSync(PYTHON, ['-c', SCRIPT], { encoding: 'utf8' })) as Generated;
}

function applied(cells: string[], changes: CellChange[]): string[] {
  const after = [...cells];
  for (const change of changes) {
    const holder = {
      text: after[change.cell] ?? '',
      replace(from: number, to: number, insert: string) {
        this.text = this.text.slice(0, from) + insert + this.text.slice(to);
      },
    };
    applyEdits(holder, change.edits);
    after[change.cell] = holder.text;
  }
  return after;
}

describe('the answer of POST /gpulens/analyze', () => {
  const generated = generate();
  const answer = parseAnswer(generated.answer) as ActionsAnswer;

  it('is read as an answer, and other payloads are not', () => {
    expect(answer).not.toBeNull();
    expect(parseAnswer({ ...(generated.answer as object), schema: 'gpulens.status/1' })).toBeNull();
    expect(parseAnswer({ schema: 'gpulens.notebook-actions/1', cells: [{}] })).toBeNull();
    expect(parseAnswer(null)).toBeNull();
    expect(parseAnswer({ ...(generated.answer as object), some_future_field: 1 })).not.toBeNull();
  });

  it("finds the fixes on a line by the line's offsets, as the Python side words them", () => {
    const cell = generated.cells[1] ?? '';
    const lineStart = cell.indexOf('    total +=');
    const lineEnd = cell.indexOf('\n', lineStart);
    const here = findingsBetween(answer, 1, lineStart, lineEnd);
    expect(here.map((finding) => finding.code)).toContain('GPU001');
    expect(findingsBetween(answer, 1, 0, cell.indexOf('\n'))).toEqual([]);
    const fix = fixesOf(here)[0];
    expect(fix?.label).toBe(`gpulens: ${fix?.title}`);
  });

  it("applies a fix's edits to the same text as the Python side", () => {
    const finding = (answer.cells[1]?.findings ?? []).find((entry) => entry.code === 'GPU001');
    const fix = finding?.fixes[0];
    expect(fix).toBeDefined();
    expect(applied(generated.cells, fix?.cells ?? [])).toEqual(generated.fix);
  });

  it('applies "Fix all in notebook" to the same cells as the Python side', () => {
    expect(answer.fix_all?.label).toBe('gpulens: Fix all in notebook');
    expect(applied(generated.cells, answer.fix_all?.cells ?? [])).toEqual(generated.fix_all);
  });

  it('applies a refactor to the same text as the Python side', () => {
    expect(answer.refactor?.title).toBe('Move to device (cuda:1)');
    expect(applied(generated.cells, answer.refactor?.cells ?? [])).toEqual(generated.refactor);
    expect(answer.refactors.filter((entry) => entry.asks_device).map((entry) => entry.id)).toEqual([
      'move_to_device',
    ]);
  });
});

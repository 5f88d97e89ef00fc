"""`apply_fixes`: each fix whole or not at all, and never a text that stops parsing.

The fixes here are written by hand to reach the cases real rules seldom make (overlaps,
a fix that breaks the parse); `tests/lsp/test_lsp_fix_application.py` drives the same rules
through `gpulens check --fix` and the language server.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpulens.analysis import Edit, Fix, Span
from gpulens.analysis.edits import apply_fixes
from gpulens.analysis.incremental import BlockParser

TEXT = "a = 1\nb = first(2)\nc = 3\n"


def replace(line: int, column: int, end: int, new_text: str) -> Edit:
    return Edit(Span(line, column, line, end), new_text)


def test_a_fix_overlapping_one_taken_before_is_deferred_whole() -> None:
    wide = Fix("A", (replace(0, 4, 5, "10"), replace(1, 4, 9, "second")))
    narrow = Fix("B", (replace(1, 4, 9, "third"),))
    result = apply_fixes(TEXT, [wide, narrow])
    assert result.text == "a = 10\nb = second(2)\nc = 3\n"
    assert (result.applied, result.deferred) == ((wide,), (narrow,))
    # the other way round, A's first edit is not made either
    result = apply_fixes(TEXT, [narrow, wide])
    assert result.text == "a = 1\nb = third(2)\nc = 3\n"
    assert (result.applied, result.deferred) == ((narrow,), (wide,))


def test_an_edit_two_fixes_share_is_made_once() -> None:
    shared = replace(2, 4, 5, "4")
    one = Fix("one", (replace(0, 4, 5, "2"), shared))
    two = Fix("two", (shared, replace(1, 4, 9, "again")))
    result = apply_fixes(TEXT, [one, two])
    assert result.text == "a = 2\nb = again(2)\nc = 4\n"
    assert result.applied == (one, two)


def test_inserts_at_one_point_are_made_in_order() -> None:
    point = Span.point(3, 0)
    result = apply_fixes(
        TEXT, [Fix("x", (Edit(point, "x = 1\n"),)), Fix("y", (Edit(point, "y = 2\n"),))]
    )
    assert result.text == TEXT + "x = 1\ny = 2\n"


def test_a_fix_that_breaks_the_parse_is_rejected_and_the_others_stay() -> None:
    good = Fix("good", (replace(0, 4, 5, "2"),))
    bad = Fix("bad", (replace(1, 4, 9, "def (:"),))
    result = apply_fixes(TEXT, [good, bad])
    assert result.text == "a = 2\nb = first(2)\nc = 3\n"
    assert (result.applied, result.rejected) == ((good,), (bad,))


def test_a_fix_whose_edits_overlap_each_other_is_rejected() -> None:
    tangled = Fix("tangled", (replace(1, 4, 9, "f"), replace(1, 6, 11, "g")))
    result = apply_fixes(TEXT, [tangled])
    assert result.text == TEXT and result.rejected == (tangled,)


def test_after_a_syntax_error_nothing_is_fixed_and_before_it_the_error_stays() -> None:
    text = "a = 1\nif x\n    pass\nb = 2\n"
    above = Fix("above", (replace(0, 4, 5, "2"),))
    below = Fix("below", (replace(3, 4, 5, "3"),))
    result = apply_fixes(text, [above, below])
    assert result.text == "a = 2\nif x\n    pass\nb = 2\n"
    assert (result.applied, result.past_error) == ((above,), (below,))


def test_inserted_line_breaks_are_the_texts_own() -> None:
    crlf = TEXT.replace("\n", "\r\n")
    add = Fix("add", (Edit(Span.point(3, 0), "d = 4\n"),))
    assert apply_fixes(crlf, [add]).text == crlf + "d = 4\r\n"


def test_a_cell_is_checked_as_the_ipython_it_is() -> None:
    cell = "%time x = 1\ny = first(2)\n"
    fix = Fix("fix", (replace(1, 4, 9, "second"),))
    assert apply_fixes(cell, [fix], cell=True).applied == (fix,)
    # as plain Python the cell does not parse from its first line on: nothing is fixed
    assert apply_fixes(cell, [fix]).past_error == (fix,)


# ---- parsing only the statements a fix touches gives what parsing the whole text gives ---------

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
PIECES = ["", "x", "(", ")", ":", "\n", "    ", "pass", "\n    y = 1\n", "def f():\n", '"""', "#"]


@settings(max_examples=150, deadline=None)
@given(
    example=st.sampled_from(EXAMPLES),
    where=st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(0, 8)),
    new_text=st.lists(st.sampled_from(PIECES), max_size=4).map("".join),
)
def test_checking_the_touched_statements_agrees_with_checking_the_text(
    example: Path, where: tuple[float, float, int], new_text: str
) -> None:
    text = example.read_text()
    lines = text.split("\n")
    line = int(where[0] * (len(lines) - 1))
    column = int(where[1] * len(lines[line]))
    end = min(column + where[2], len(lines[line]))
    fix = Fix("random", (replace(line, column, end, new_text),))
    parser = BlockParser()
    parser.parse(text)
    starts = parser.statement_starts(text)
    assert starts is not None
    quick = apply_fixes(text, [fix], statement_starts=starts)
    whole = apply_fixes(text, [fix])
    assert (quick.text, quick.applied, quick.rejected) == (
        whole.text,
        whole.applied,
        whole.rejected,
    )

"""A profile's lines follow a document's edits (`lsp.profiling`): the lines of the edited
text are split again only where the edit touched them, and come out as splitting the whole
text gives; results move as a line-by-line comparison of the two texts says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpulens.lsp.profiling import carry_over, lines_after, lines_of

PIECES = ["\n", "\r\n", "\r", "x", "é", " ", "import torch", "\f", "\u2028", "#"]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@st.composite
def edited(draw: st.DrawFn) -> tuple[str, str]:
    """A text and the text after replacing one stretch of it."""
    text = draw(texts)
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text, text[:start] + draw(texts) + text[end:]


@settings(max_examples=500, deadline=None)
@given(edited())
def test_the_lines_after_an_edit_are_those_of_the_whole_new_text(pair: tuple[str, str]) -> None:
    old, new = pair
    assert lines_after(old, new, lines_of(old)) == lines_of(new)


def moved_line_by_line(old: list[str], new: list[str], results: dict[int, str]) -> dict[int, str]:
    """`carry_over` as its definition reads: equal lines counted one at a time from each end."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return {
        line + (0 if line < prefix else len(new) - len(old)): result
        for line, result in results.items()
        if line < prefix or line >= len(old) - suffix
    }


lines = st.lists(st.sampled_from(["a", "b", "", "c"]), max_size=3000)


@settings(max_examples=300, deadline=None)
@given(old=lines, at=st.integers(0, 3000), drop=st.integers(0, 5), put=lines.map(lambda x: x[:5]))
def test_results_move_as_comparing_the_lines_one_by_one_says(
    old: list[str], at: int, drop: int, put: list[str]
) -> None:
    at = min(at, len(old))
    new = [*old[:at], *put, *old[at + drop :]]
    results = {line: f"r{line}" for line in range(0, len(old), 3)}
    assert carry_over(old, new, results) == moved_line_by_line(old, new, results)

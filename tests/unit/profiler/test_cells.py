from __future__ import annotations

from gpulens.profiler.cells import cell_at_line, cell_by_number, split_cells

TEXT = """import os
x = 1
# %%
y = 2
#%% [markdown]
# some prose
# %% second code cell
z = 3

"""


def test_preamble_is_cell_zero_and_cells_number_from_one() -> None:
    cells = split_cells(TEXT)
    assert [(c.index, c.first_line, c.last_line) for c in cells] == [
        (0, 1, 2),
        (1, 3, 4),
        (2, 5, 6),
        (3, 7, 9),
    ]
    assert cells[2].markdown and not cells[3].markdown
    assert cells[1].source == "# %%\ny = 2\n"


def test_cell_holding_a_line() -> None:
    cells = split_cells(TEXT)
    assert cell_at_line(cells, 1).index == 0
    assert cell_at_line(cells, 3).index == 1
    assert cell_at_line(cells, 8).index == 3
    assert cell_at_line(cells, 99) is None
    assert cell_by_number(cells, 3).first_line == 7
    assert cell_by_number(cells, 4) is None


def test_file_starting_with_a_marker_has_an_empty_preamble() -> None:
    cells = split_cells("# %%\na = 1\n")
    assert cells[0].source == "" and cells[0].last_line == 0
    assert cells[1].first_line == 1


def test_form_feed_does_not_shift_cell_lines() -> None:
    from gpulens.profiler.cells import split_cells

    text = "import os\n# %%\nx = 1\x0c\ny = 2\n# %%\nz = 3\n"
    cells = split_cells(text)
    # the form feed is no line end for Python: the second marker stands on line 5
    assert [(c.index, c.first_line) for c in cells] == [(0, 1), (1, 2), (2, 5)]

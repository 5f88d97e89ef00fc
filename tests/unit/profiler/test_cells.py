from __future__ import annotations

from gpulens.profiler.cells import cell_at_line, cell_by_number, sets_up_process_group, split_cells

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


# --- a distributed job: which cells run as ranks ------------------------------------------------

DDP_SCRIPT = """\
import torch.distributed as dist
# %%
dist.init_process_group("nccl")
# %%
x = 1
# %% [markdown]
# init_process_group("gloo") in prose is not a call
"""


def test_a_cell_after_the_process_group_setup_runs_as_ranks() -> None:
    assert sets_up_process_group(DDP_SCRIPT, 3)  # the setup cell itself
    assert sets_up_process_group(DDP_SCRIPT, 5)  # a cell after it: the setup runs first
    assert not sets_up_process_group(DDP_SCRIPT, 1)  # the preamble runs alone


def test_only_a_call_counts_and_only_in_cells_that_run() -> None:
    mentions = '# %%\nname = "init_process_group"\n# init_process_group() later\n'
    assert not sets_up_process_group(mentions, 2)
    later = "# %%\nx = 1\n# %%\nimport torch\ntorch.distributed.init_process_group('gloo')\n"
    assert not sets_up_process_group(later, 2)  # set up in a cell below the profiled one
    assert sets_up_process_group(later, 4)


def test_a_file_without_markers_is_one_program_and_a_broken_cell_is_skipped() -> None:
    assert sets_up_process_group("import os\n\ninit_process_group(backend='gloo')\n", 1)
    broken = "# %%\ninit_process_group(\n# %%\nx = 1\n"
    assert not sets_up_process_group(broken, 4)

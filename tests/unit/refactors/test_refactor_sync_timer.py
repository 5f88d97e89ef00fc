"""Synchronize-aware timer: whole statements of one block, waits chosen by framework."""

from __future__ import annotations

import pytest
from refactor_checks import DATA, applied, example, lines

from gpulens.analysis.model import Span
from gpulens.analysis.refactors.sync_timer import insert_cupy_benchmark, insert_sync_timer

M = "  # gpulens: timer"
WARM = "# warm-up: first run pays for CUDA context, cuDNN autotuning and compilation"


def test_benchmark_snippet_top_level() -> None:
    expected = (DATA / "bench.timed_top.txt").read_text(encoding="utf-8")
    assert applied(insert_sync_timer, example("bench"), lines(13, 15)) == expected


def test_partial_selection_inside_a_function_grows_to_whole_statements() -> None:
    expected = (DATA / "bench.timed_function.txt").read_text(encoding="utf-8")
    # from the middle of one line to the middle of the next
    selection = Span(8, 10, 9, 5)
    assert applied(insert_sync_timer, example("bench"), selection) == expected


def test_perf_counter_clock_for_torch() -> None:
    text = "import torch\n\ny = torch.mm(a, b)\n"
    output = applied(
        lambda t, s: insert_sync_timer(t, s, warmup=False, clock="perf_counter"), text, lines(2, 2)
    )
    assert output == (
        "import torch\nimport time\n\n"
        f"torch.cuda.synchronize(){M}\n"
        f"start_time = time.perf_counter(){M}\n"
        "y = torch.mm(a, b)\n"
        f"torch.cuda.synchronize(){M}\n"
        f"elapsed_ms = (time.perf_counter() - start_time) * 1000{M}\n"
        f'print(f"y = torch.mm(a, b): {{elapsed_ms:.3f}} ms"){M}\n'
    )


def test_cupy_with_tabs_inside_a_loop() -> None:
    text = "import cupy as xp\n\nfor i in range(3):\n\tc = xp.fft.fft(a)\n\tprint(i)\n"
    assert applied(insert_sync_timer, text, Span.point(3, 4)) == (
        "import cupy as xp\nimport time\n\nfor i in range(3):\n"
        f"\t{WARM}\n"
        "\tc = xp.fft.fft(a)\n"
        f"\txp.cuda.Stream.null.synchronize(){M}\n"
        f"\tstart_time = time.perf_counter(){M}\n"
        "\tc = xp.fft.fft(a)\n"
        f"\txp.cuda.Stream.null.synchronize(){M}\n"
        f"\telapsed_ms = (time.perf_counter() - start_time) * 1000{M}\n"
        f'\tprint(f"c = xp.fft.fft(a): {{elapsed_ms:.3f}} ms"){M}\n'
        "\tprint(i)\n"
    )


def test_jax_blocks_on_the_last_assigned_value() -> None:
    text = "import time\nimport jax.numpy as jnp\n\nx = jnp.ones(8)\ny = jnp.dot(x, x)\n"
    assert applied(lambda t, s: insert_sync_timer(t, s, warmup=False), text, lines(3, 4)) == (
        "import time\nimport jax.numpy as jnp\nimport jax\n\n"
        f"start_time = time.perf_counter(){M}\n"
        "x = jnp.ones(8)\ny = jnp.dot(x, x)\n"
        f"jax.block_until_ready(y){M}\n"
        f"elapsed_ms = (time.perf_counter() - start_time) * 1000{M}\n"
        f'print(f"x = jnp.ones(8): {{elapsed_ms:.3f}} ms"){M}\n'
    )


def test_plain_python_gets_no_warm_up_and_safe_names() -> None:
    text = 'from time import time\nelapsed_ms = 0\ntotal = sum(range(10))  # "{sum}"\n'
    assert applied(insert_sync_timer, text, lines(2, 2)) == (
        "from time import time\nimport time as _time\nelapsed_ms = 0\n"
        f"start_time = _time.perf_counter(){M}\n"
        'total = sum(range(10))  # "{sum}"\n'
        f"elapsed_ms_2 = (_time.perf_counter() - start_time) * 1000{M}\n"
        f'print(f"total = sum(range(10)) # \\"{{{{sum}}}}\\": {{elapsed_ms_2:.3f}} ms"){M}\n'
    )


def test_long_first_line_is_shortened_in_the_label() -> None:
    text = "import torch\nresult = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
    output = applied(insert_sync_timer, text, lines(1, 1))
    assert 'print(f"result = torch.nn.functional.scaled_d...: {elapsed_ms:.3f} ms")' in output


def test_whole_loop_when_selection_reaches_its_end() -> None:
    text = "import torch\nx = torch.ones(2)\nfor i in range(2):\n    x = x * 2\nprint(x)\n"
    output = applied(lambda t, s: insert_sync_timer(t, s, warmup=False), text, lines(1, 3))
    assert output.splitlines()[4:8] == [
        f"start_event.record(){M}",
        "x = torch.ones(2)",
        "for i in range(2):",
        "    x = x * 2",
    ]
    assert output.splitlines()[8] == f"end_event.record(){M}"


def test_cupy_benchmark_for_a_single_call() -> None:
    text = "import cupy as cp\n\ncp.matmul(a, b, out=c)\n"
    assert applied(insert_cupy_benchmark, text, lines(2, 2)) == (
        "import cupy as cp\nimport cupyx.profiler\n\ncp.matmul(a, b, out=c)\n"
        "print(cupyx.profiler.benchmark(cp.matmul, (a, b), kwargs={'out': c}, n_repeat=100))"
        f"{M}\n"
    )


@pytest.mark.parametrize(
    ("text", "selection"),
    [
        pytest.param("import torch\nx = torch.ones(\n", lines(1, 1), id="syntax error"),
        pytest.param("import torch\n\nx = 1\n", Span.point(1, 0), id="blank line"),
        pytest.param("import torch\n# note\nx = 1\n", lines(1, 1), id="comment only"),
        pytest.param(
            "import torch\ndef f(a):\n    b = a + 1\n    return b\n",
            lines(2, 3),
            id="return would skip the end",
        ),
        pytest.param("import torch\nfor i in r:\n    a = i\n    break\n", lines(2, 3), id="break"),
        pytest.param(
            "import torch\nfor i in r:\n    a = i\n    b = 2\nc = 3\n",
            lines(3, 4),
            id="two block levels",
        ),
        pytest.param(
            "import torch\nx = 0\nif c:\n    a = 1\n    b = 2\n",
            lines(1, 3),
            id="ends inside a block",
        ),
        pytest.param("import torch\nx = (1,\n     2); y = 3\n", lines(1, 1), id="shares a line"),
        pytest.param(
            f"import torch\nstart = 1{M}\nx = torch.ones(1)\n", lines(2, 2), id="already timed"
        ),
        pytest.param("def f():\n    global g\n    g = 1\n", lines(1, 2), id="global"),
    ],
)
def test_nothing_to_do(text: str, selection: Span) -> None:
    assert insert_sync_timer(text, selection) == []


def test_statements_side_by_side_are_taken_together() -> None:
    text = "import torch\nx = 1; y = 2\n"
    output = applied(insert_sync_timer, text, Span(1, 7, 1, 12))
    assert output.count("x = 1; y = 2") == 2  # the warm-up copy and the timed line


def test_header_to_part_of_the_body_takes_the_whole_statement() -> None:
    text = "import torch\nif c:\n    a = torch.ones(1)\n    b = 2\nc = 3\n"
    output = applied(lambda t, s: insert_sync_timer(t, s, warmup=False), text, lines(1, 2))
    assert output.splitlines()[5:9] == [
        "if c:",
        "    a = torch.ones(1)",
        "    b = 2",
        f"end_event.record(){M}",
    ]


def test_whole_file_is_no_selection() -> None:
    assert insert_sync_timer("x = 1\n", None) == []


def test_elif_header_times_the_whole_if() -> None:
    text = "import torch\nif a:\n    x = torch.ones(1)\nelif b:\n    x = torch.zeros(1)\n"
    output = applied(lambda t, s: insert_sync_timer(t, s, warmup=False), text, lines(3, 3))
    assert output.splitlines()[5:10] == [
        "if a:",
        "    x = torch.ones(1)",
        "elif b:",
        "    x = torch.zeros(1)",
        f"end_event.record(){M}",
    ]

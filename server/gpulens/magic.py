"""IPython extension: `%%gpulens` profiles a cell in the kernel, with its state;
`%gpulens status` shows the GPUs.

The cell runs in the user's namespace; the result is displayed as one bundle:
`application/vnd.gpulens.profile+json` (the payload, for the editor clients), `text/html`
(a table) and `text/plain`. Line numbers are the notebook cell's own: line 1 is the
`%%gpulens` line, so the body starts at line 2; `--cell N` (the cell's place in its notebook,
from 1, which the editors pass when they add the line) names the cell in the report, else it is
named by its execution count. The capture backend releases CUPTI and the
line hooks in all cases; a cell that raises is still reported, then its exception is
raised again so "run all" stops as it would without the magic. A line the magic cannot
read raises IPython's UsageError, which stops "run all" too, and runs nothing.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, NoReturn

from gpulens.profiler.capture import MEMORY_BY_DEFAULT, MEMORY_CHOICES

MIME = "application/vnd.gpulens.profile+json"
_USAGE = (
    "usage: %%gpulens [--backend auto|cupti|torch|host] [--cell N] "
    "[--memory reserved|all|off] [--no-memory] [--no-sampling]  |  "
    "%gpulens status"
)


class _Parser(argparse.ArgumentParser):
    """argparse that raises what it finds wrong instead of printing it and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def _cell_number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--cell takes a cell's place from 1, not {text!r}")
    return int(text)


def parse_options(line: str) -> argparse.Namespace:
    """The `%%gpulens` line's options; ValueError says what is wrong with it."""
    parser = _Parser(prog="%%gpulens", add_help=False, exit_on_error=False)
    parser.add_argument("--backend", choices=("auto", "cupti", "torch", "host"), default="auto")
    # where the cell stands in its notebook (from 1), for the report's header: the kernel
    # knows only the execution count; the editors that add `%%gpulens` say which cell it is
    parser.add_argument("--cell", type=_cell_number, default=None)
    # GPU memory per line: the views recorded (the driver's by default)
    parser.add_argument("--memory", choices=MEMORY_CHOICES, default=MEMORY_BY_DEFAULT)
    parser.add_argument("--no-memory", dest="memory", action="store_const", const="off")
    # every run of every line recorded: a Python-heavy loop's lines are otherwise sampled
    parser.add_argument("--no-sampling", dest="sample", action="store_false")
    try:
        return parser.parse_args(shlex.split(line))
    except argparse.ArgumentError as error:
        raise ValueError(str(error)) from error


def profile_cell_in_kernel(
    shell: Any,
    cell: str,
    backend: str = "auto",
    place: int | None = None,
    *,
    memory: str = MEMORY_BY_DEFAULT,
    sample: bool = True,
) -> tuple[dict[str, Any], BaseException | None]:
    """Runs `cell` in `shell.user_ns` under the profiler: (payload, the cell's exception).
    `place`: where the cell stands in its notebook, from 1, when the caller knows;
    `memory`: the GPU memory views recorded (`capture.MEMORY_CHOICES`); `sample`: False
    records every run of a Python-heavy loop's lines."""
    import datetime as dt

    from gpulens.profiler.capture import preloaded, profile_code

    preloaded()
    from gpulens.profiler.attribution import attribute_records
    from gpulens.profiler.report import build_payload

    body = shell.transform_cell(cell)
    source = "\n" + body  # line 1 of the notebook cell is the %%gpulens line itself
    number = getattr(shell, "execution_count", 0)
    filename = shell.compile.cache(source, number)  # tracebacks show the cell's source
    code = compile(source, filename, "exec", shell.compile.flags, dont_inherit=True)
    capture = profile_code(code, shell.user_ns, backend, memory=memory, sample=sample)
    attributed = attribute_records(capture.timeline, capture.records)
    lines = body.splitlines()
    payload = build_payload(
        attributed,
        source={
            "path": None,
            "cell": place,
            "execution_count": number,
            "first_line": 2,
            "last_line": 1 + max(len(lines), 1),
        },
        backend=capture.backend,
        gpus=capture.gpus,
        warnings=capture.warnings,
        wall_s=capture.timings.get("cell_s"),
        error=capture.error,
        code=lines,
        timings=capture.timings,
        time=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    return payload, capture.exception


def bundle(payload: dict[str, Any]) -> dict[str, Any]:
    from gpulens.profiler.report import render_html, render_text

    return {MIME: payload, "text/html": render_html(payload), "text/plain": render_text(payload)}


def show_status() -> None:
    """`%gpulens status`: the status table of the GPUs as this kernel's interpreter sees them."""
    from gpulens.device.display import status_table
    from gpulens.device.status import shared_source

    print(status_table(shared_source().snapshot(wait_for_frameworks=True)))


def _make_magics() -> Any:
    from IPython.core.error import UsageError
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class GpulensMagics(Magics):
        @line_cell_magic
        def gpulens(self, line: str, cell: str | None = None) -> None:
            if cell is None:
                if line.strip() == "status":
                    show_status()
                elif line.strip():
                    raise UsageError(f"%gpulens does not know {line.strip()!r}; {_USAGE}")
                else:
                    print(_USAGE)
                return
            try:
                options = parse_options(line)
            except ValueError as error:
                raise UsageError(f"{error}; the cell did not run. {_USAGE}") from None
            from IPython.display import display

            payload, raised = profile_cell_in_kernel(
                self.shell,
                cell,
                options.backend,
                options.cell,
                memory=options.memory,
                sample=options.sample,
            )
            display(bundle(payload), raw=True)
            if raised is not None:
                raise raised

    return GpulensMagics


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(_make_magics())
    # what the first %%gpulens would load, loaded now on a thread: the first profile a user
    # judges costs what the next ones do
    from gpulens.profiler.capture import preloading

    preloading()


def unload_ipython_extension(ipython: Any) -> None:
    """Nothing is left to undo: every profile releases its hooks when it ends."""

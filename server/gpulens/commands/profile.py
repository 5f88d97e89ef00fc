"""`gpulens profile FILE.py [--cell N | --line L] [--format text|json|html] [-o OUT] [-- ARGS]`,
and `gpulens profile --replay SAVED.json`: a saved profile shown again, nothing run."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from typing import Any

from gpulens.commands._paths import not_regular, unreachable
from gpulens.commands._usage import OneLineParser, add_run_options, whole_number
from gpulens.profiler.capture import MEMORY_BY_DEFAULT, MEMORY_CHOICES

HELP = "run a script (or one `# %%` cell of it) and show each line's kernels, copies and syncs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE.py", help="the script to run")
    _add_options(parser)
    # argparse leaves options after FILE to a REMAINDER; run() parses them again, up to "--"
    parser.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="-- ARGS", help="arguments for the script"
    )


def _add_options(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--cell",
        type=whole_number(0, "a cell number"),
        metavar="N",
        help="profile only cell N (from 1; 0 is the code before the first `# %%`)",
    )
    which.add_argument(
        "--line",
        type=whole_number(1, "a line number"),
        metavar="L",
        help="profile only the cell holding line L (from 1)",
    )
    parser.add_argument(
        "--replay",
        action="store_true",
        help="FILE is a saved profile (--format json, or a %%%%gpulens output): show it "
        "again, labelled as recorded; nothing runs",
    )
    parser.add_argument("--format", choices=("text", "json", "html"), default="text")
    parser.add_argument("-o", "--output", metavar="OUT", help="write the report here, not stdout")
    add_run_options(parser, "stop the run after S seconds")
    parser.add_argument(
        "--memory",
        choices=MEMORY_CHOICES,
        default=MEMORY_BY_DEFAULT,
        help="GPU memory per line: the driver's view (reserved, CUPTI's memory records; the "
        "default), all (and torch's allocator view, allocated: costs more while the cell "
        "runs) or off",
    )
    parser.add_argument(
        "--no-memory",
        dest="memory",
        action="store_const",
        const="off",
        help="the same as --memory off",
    )
    parser.add_argument(
        "--no-sampling",
        dest="sample",
        action="store_false",
        help="record every run of every line: a Python-heavy loop's lines are otherwise "
        "recorded in stretches past the cell's first 65,536 line events (Python 3.12+), "
        "their hits the runs recorded, their host time partly estimated",
    )
    parser.add_argument(
        "--nproc-per-node",
        type=whole_number(1, "a number of ranks"),
        metavar="N",
        help="run it as N ranks of a distributed job, launched by torch.distributed.run "
        "(as torchrun --standalone would), and show each line's costs over the ranks",
    )


def _write_output(chunk: bytes) -> None:
    """The script's output, shown as it comes (on stderr: stdout carries the report)."""
    sys.stderr.buffer.write(chunk)
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    import signal

    from gpulens.profiler.runner import (
        ProfileRequestError,
        StopRequest,
        run_profile,
        stop_on_signals,
    )

    rest = list(args.args)
    split = rest.index("--") if "--" in rest else len(rest)
    options, script_args = rest[:split], rest[split + 1 :]
    if options:
        again = OneLineParser(prog="gpulens profile")
        _add_options(again)
        again.parse_args(options, namespace=args)
    if args.replay:
        problem = _replay_problem(args, script_args) or _output_problem(args.output)
        saved = problem if problem is not None else _saved_payload(args.file)
        if isinstance(saved, str):
            print(f"gpulens profile: error: {saved}", file=sys.stderr)
            return 2
        return _report(args, saved, 1 if saved.get("error") else 0)
    problem = _file_problem(args.file) or _output_problem(args.output)
    if problem:
        print(f"gpulens profile: error: {problem}", file=sys.stderr)
        return 2
    stop = StopRequest()
    # Ctrl-C, a kill or a closed terminal stops the script too (the lines that ran are
    # still reported); the script runs in a process group of its own, out of their reach
    with stop_on_signals(stop):
        try:
            payload = run_profile(
                args.file,
                cell=args.cell,
                line=args.line,
                python=args.python,
                timeout=args.timeout,
                args=script_args,
                backend=args.backend,
                on_output=_write_output if args.format == "text" else None,
                stop=stop,
                nproc_per_node=args.nproc_per_node,
                memory=args.memory,
                sample=args.sample,
            )
        except ProfileRequestError as error:
            print(f"gpulens profile: error: {error}", file=sys.stderr)
            return 2
    status = 1 if payload.get("error") else 0
    if stop.reason is not None:
        status = 128 + signal.Signals[stop.reason].value  # what the shell expects
    return _report(args, payload, status)


def _report(args: argparse.Namespace, payload: dict[str, Any], status: int) -> int:
    """Writes the payload as asked (stdout or -o); `status` unless the report is lost."""
    from gpulens.profiler.report import render_html, render_text

    if args.format == "json":
        rendered = json.dumps(payload, indent=1) + "\n"
    elif args.format == "html":
        rendered = render_html(payload, page=True)
    else:
        rendered = render_text(payload)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(rendered)
        except OSError as error:
            print(
                f"gpulens profile: error: cannot write {args.output} ({error.strerror or error}); "
                "the report was not saved: choose another -o",
                file=sys.stderr,
            )
            return 2
    else:
        try:
            sys.stdout.write(rendered)
            sys.stdout.flush()
        except OSError:  # the terminal went away (SIGHUP): nothing left to show it on
            pass
    return status


def _replay_problem(args: argparse.Namespace, script_args: list[str]) -> str | None:
    ran_with = [
        flag
        for flag, given in (
            ("--cell", args.cell is not None),
            ("--line", args.line is not None),
            ("--timeout", args.timeout is not None),
            ("--python", args.python is not None),
            ("--backend", args.backend != "auto"),
            ("--memory", args.memory != MEMORY_BY_DEFAULT),
            ("--no-sampling", not args.sample),
            ("--nproc-per-node", args.nproc_per_node is not None),
            ("-- ARGS", bool(script_args)),
        )
        if given
    ]
    if ran_with:
        return f"--replay shows a saved profile and runs nothing: drop {', '.join(ran_with)}"
    return _file_problem(args.file, script=False)


def _saved_payload(path: str) -> dict[str, Any] | str:
    """The saved profile in `path`, with its words written anew; a string says what is wrong."""
    from gpulens.profiler.display import annotate

    try:
        with open(path, encoding="utf-8") as handle:
            payload = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return f"cannot read {path} as a saved profile ({error}); save one with --format json"
    if not isinstance(payload, dict) or not str(payload.get("schema", "")).startswith(
        "gpulens.profile/"
    ):
        return f"{path} is not a gpulens profile (no gpulens.profile schema in it)"
    return annotate(payload, recorded=True)


def _file_problem(path: str, script: bool = True) -> str | None:
    """Why FILE cannot be run, before anything runs (a FIFO would block the read forever)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return unreachable(path, path, error)
    what = "name the Python script to run" if script else "name the saved profile to show"
    if stat.S_ISDIR(mode):
        return f"{path} is a folder; {what}"
    if not stat.S_ISREG(mode):
        return not_regular(path, mode, what)
    if script and path.endswith(".ipynb"):
        return (
            f"{path} is a notebook: `gpulens profile` runs Python scripts; in Jupyter, run "
            "`%load_ext gpulens` and start the cell with `%%gpulens`"
        )
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        return unreachable(path, path, error)
    return None


def _output_problem(output: str | None) -> str | None:
    """Why the report could not be written to OUT, said before the run rather than after."""
    if output is None:
        return None
    if os.path.isdir(output):
        return f"-o {output} is a folder; name the file to write the report to"
    folder = os.path.dirname(output) or "."
    if not os.path.isdir(folder):
        return f"-o {output}: the folder {folder} does not exist; create it or choose another"
    return None

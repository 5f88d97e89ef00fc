"""`gpulens profile FILE.py [--cell N | --line L] [--format text|json|html] [-o OUT] [-- ARGS]`."""

from __future__ import annotations

import argparse
import json
import sys

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
    which.add_argument("--cell", type=int, metavar="N", help="profile only cell N (from 1)")
    which.add_argument("--line", type=int, metavar="L", help="profile only the cell holding line L")
    parser.add_argument("--format", choices=("text", "json", "html"), default="text")
    parser.add_argument("-o", "--output", metavar="OUT", help="write the report here, not stdout")
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="stop the run after S seconds"
    )
    parser.add_argument(
        "--python", metavar="INTERP", help="interpreter to run it with (default: this one)"
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "cupti", "torch", "host"),
        default="auto",
        help="capture backend (default: the best available)",
    )


def _write_output(chunk: bytes) -> None:
    """The script's output, shown as it comes (on stderr: stdout carries the report)."""
    sys.stderr.buffer.write(chunk)
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    import signal

    from gpulens.profiler.report import render_html, render_text
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
        again = argparse.ArgumentParser(prog="gpulens profile")
        _add_options(again)
        again.parse_args(options, namespace=args)
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
            )
        except ProfileRequestError as error:
            print(f"gpulens profile: {error}", file=sys.stderr)
            return 2
    status = 1 if payload.get("error") else 0
    if stop.reason is not None:
        status = 128 + signal.Signals[stop.reason].value  # what the shell expects
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
            print(f"gpulens profile: cannot write {args.output}: {error.strerror}", file=sys.stderr)
            return 2
    else:
        try:
            sys.stdout.write(rendered)
            sys.stdout.flush()
        except OSError:  # the terminal went away (SIGHUP): nothing left to show it on
            pass
    return status

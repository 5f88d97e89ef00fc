"""`gpulens measure-fix FILE --line L --rule CODE [--fix TITLE] [--runs N] [--json]`: run the
cell holding a finding as it is and with its fix applied, several times each, and say whether
the fix is faster beyond the noise and which GPU records changed. The file is never written."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpulens.commands._usage import add_run_options, whole_number

HELP = "measure a finding's fix: run its cell as it is and fixed, and compare times and records"

_EPILOG = """\
The cell is the `# %%` cell holding line L (the whole file where it has no cells), run with the
cells before it as setup, each run in a fresh subprocess, alternating as-is and fixed runs. Each
run profiles the cell (its records; its warm-up) and then times a second, unprofiled run of it,
until its GPU work is done: those times are compared, by an exact one-sided Mann-Whitney test
at p <= 0.05. The fix is the finding's first safe one unless --fix names another by its title.
Nothing is written.
exit status: 0 measured (faster or not: the report says), 1 a run failed, 2 usage error.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("file", metavar="FILE.py", help="the script holding the finding")
    parser.add_argument(
        "--line",
        type=whole_number(1, "a line number"),
        required=True,
        metavar="L",
        help="the finding's line (from 1)",
    )
    parser.add_argument("--rule", required=True, metavar="CODE", help="the finding's code, GPU001")
    parser.add_argument("--fix", metavar="TITLE", help="the fix's title, where it has several")
    parser.add_argument(
        "--runs",
        type=whole_number(3, "a number of runs"),
        default=None,
        metavar="N",
        help="runs of each version (default 5, at least 3)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the gpulens.measure-fix/1 result"
    )
    add_run_options(parser, "limit of each run (its process, both runs of the cell)")


def _error(message: str) -> int:
    print(f"gpulens measure-fix: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    import signal

    from gpulens.analysis import analyze
    from gpulens.analysis.config import ConfigError, load_config
    from gpulens.analysis.encoding import SourceDecodeError, decode_source
    from gpulens.commands.profile import _file_problem
    from gpulens.profiler.measure_fix import (
        DEFAULT_RUNS,
        MeasureRequestError,
        choose_fix,
        plan_measurement,
        render_text,
        run_measurement,
    )
    from gpulens.profiler.runner import StopRequest, stop_on_signals

    problem = _file_problem(args.file)
    if problem:
        return _error(problem)
    path = Path(args.file)
    try:
        text = decode_source(path.read_bytes(), args.file).text
        config = load_config(path.resolve().parent)
    except OSError as error:
        return _error(f"cannot read {args.file}: {error.strerror or error}")
    except (SourceDecodeError, ConfigError) as error:
        return _error(str(error))
    try:
        finding, fix = choose_fix(analyze(text, config).findings, args.line, args.rule, args.fix)
        plan = plan_measurement(args.file, text, finding, fix)
    except MeasureRequestError as error:
        return _error(f"{args.file}: {error}")

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            end = "\n" if done == total else ""
            print(f"\rgpulens measure-fix: run {done} of {total}", end=end, file=sys.stderr)

    stop = StopRequest()
    with stop_on_signals(stop):
        result = run_measurement(
            plan,
            runs=args.runs or DEFAULT_RUNS,
            python=args.python,
            timeout=args.timeout,
            backend=args.backend,
            stop=stop,
            on_run=progress,
        )
    try:
        if args.json:
            sys.stdout.write(json.dumps(result, indent=1) + "\n")
        else:
            sys.stdout.write(render_text(result))
        sys.stdout.flush()
    except OSError:
        pass
    if stop.reason is not None:
        return 128 + signal.Signals[stop.reason].value
    return 1 if result["verdict"] == "failed" else 0

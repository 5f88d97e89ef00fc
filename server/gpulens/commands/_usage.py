"""Command-line usage shared by the subcommands: one-line errors and checked argument types.

Every usage error is one line on stderr (what, and where to read more) with exit status 2;
argparse's own errors (a bad choice, an unknown option) print the same way.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from collections.abc import Callable
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse, with each error as one line instead of the usage block and the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def positive_seconds(value: str) -> float:
    """A finite number of seconds above zero (`--timeout`, `--watch`)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive, finite number of seconds, got {value!r}"
        )
    return seconds


def whole_number(least: int, what: str) -> Callable[[str], int]:
    """An int of at least ``least``; ``what`` names it in the error ("a cell number")."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value!r}") from None
        if number < least:
            raise argparse.ArgumentTypeError(f"expected {what} of {least} or more, got {number}")
        return number

    return parse


def interpreter(value: str) -> str:
    """A Python interpreter to run: a path to an executable, or a name on PATH."""
    if value and shutil.which(value):
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r} is not an executable Python (no such file, or not executable); give the "
        f"path of an interpreter, e.g. {sys.executable}"
    )


def add_run_options(parser: argparse.ArgumentParser, timeout_help: str) -> None:
    """`--timeout`, `--python` and `--backend`: how a command that runs the user's code in a
    profiled subprocess runs it (`gpulens profile`, `gpulens measure-fix`)."""
    parser.add_argument(
        "--timeout", type=positive_seconds, default=None, metavar="S", help=timeout_help
    )
    parser.add_argument(
        "--python",
        type=interpreter,
        metavar="INTERP",
        help="interpreter to run it with (default: this one)",
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "cupti", "torch", "host"),
        default="auto",
        help="capture backend (default: the best available)",
    )

"""`gpulens` entry point: a thin dispatcher; each subcommand lives in `gpulens.commands`.

Subcommand modules expose ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int`` and import nothing heavy at module level, so `gpulens --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from gpulens.commands._usage import OneLineParser

SUBCOMMANDS = ("check", "serve", "status", "doctor", "profile", "measure-fix")


class _PrintVersion(argparse.Action):
    """`--version`: the installed version, read only when asked for (see `gpulens.__version__`)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        import gpulens

        sys.stdout.write(f"gpulens {gpulens.__version__}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpulens",
        description="See and fix what your Python code does to the GPU.",
    )
    parser.add_argument("--version", action=_PrintVersion, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        module_name = f"gpulens.commands.{name.replace('-', '_')}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue  # a subcommand that is not part of this build
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run, parser=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    if unknown:  # said by the subcommand, whose --help lists its options
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        os.getcwd()
    except FileNotFoundError:
        print(
            f"gpulens {args.command}: error: the current folder no longer exists; "
            "cd to an existing folder and run it again",
            file=sys.stderr,
        )
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gpulens check . | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

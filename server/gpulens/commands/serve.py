"""`gpulens serve`: the language server over stdio, as editors start it.

There is no socket transport: a listening port lets any local process connect and run code as
the user through `gpulens.profileCell`, and every LSP client can start a server over stdio.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys

HELP = "Run the language server over stdio (what editors start)."
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

TCP_REMOVED = (
    "gpulens serve: --tcp is not supported: any local process could connect to the port and "
    "run code as you; let your editor start `gpulens serve`, which speaks over stdio."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # kept only to answer old command lines with the reason, not argparse's "unrecognized"
    parser.add_argument("--tcp", metavar="HOST:PORT", help=argparse.SUPPRESS)
    parser.add_argument(
        "--log-level",
        default=os.environ.get("GPULENS_LOG_LEVEL", "WARNING"),
        choices=LOG_LEVELS,
        help="what the server writes to stderr (default WARNING; env GPULENS_LOG_LEVEL)",
    )


def run(args: argparse.Namespace) -> int:
    if args.tcp is not None:
        print(TCP_REMOVED, file=sys.stderr)
        return 2
    if args.log_level not in LOG_LEVELS:  # argparse checks the option, not its default
        print(
            f"gpulens serve: error: GPULENS_LOG_LEVEL={args.log_level!r} is not a log level; "
            f"set it to one of {', '.join(LOG_LEVELS)}",
            file=sys.stderr,
        )
        return 2
    # stderr only: on stdio, stdout carries the protocol
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # pygls and lsprotocol make a few hundred thousand objects that live as long as the
    # server: no collection reads them while they load (a full one took 30 ms of the start),
    # and none afterwards
    gc.disable()
    try:
        from gpulens.lsp.server import build_server

        server = build_server()
    finally:
        gc.freeze()
        gc.enable()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # a stray print() anywhere in the process would corrupt the protocol stream
    sys.stdout = sys.stderr
    # LSP's exit code: 0 after `shutdown` then `exit`, 1 when the client skipped `shutdown`
    return server.serve_stdio(stdin, stdout)

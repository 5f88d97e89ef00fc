"""`gpulens serve`: the language server, over stdio (what editors start) or TCP (debugging)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

HELP = "Run the language server (stdio by default; --tcp HOST:PORT to listen on a socket)."
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT such as 127.0.0.1:2087, got {value!r}"
        )
    return host, int(port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        type=_host_port,
        help="listen on a TCP socket instead of stdio, e.g. 127.0.0.1:2087",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("GPULENS_LOG_LEVEL", "WARNING"),
        choices=LOG_LEVELS,
        help="what the server writes to stderr (default WARNING; env GPULENS_LOG_LEVEL)",
    )


def run(args: argparse.Namespace) -> int:
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
    from gpulens.lsp.server import build_server

    server = build_server()
    if args.tcp is not None:
        host, port = args.tcp
        server.start_tcp(host, port)
        return 0
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # a stray print() anywhere in the process would corrupt the protocol stream
    sys.stdout = sys.stderr
    server.start_io(stdin, stdout)
    return 0

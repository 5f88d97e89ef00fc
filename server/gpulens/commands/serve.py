"""`gpulens serve`: the language server, over stdio (what editors start) or TCP (debugging)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

HELP = "Run the language server (stdio by default; --tcp HOST:PORT to listen on a socket)."


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
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="what the server writes to stderr (default WARNING; env GPULENS_LOG_LEVEL)",
    )


def run(args: argparse.Namespace) -> int:
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
    # LSP's exit code: 0 after `shutdown` then `exit`, 1 when the client skipped `shutdown`
    return server.serve_stdio(stdin, stdout)

"""`gpulens status`: the GPUs, their load and which frameworks see them."""

from __future__ import annotations

import argparse
import json
import sys
import time

from gpulens.commands._usage import interpreter, positive_seconds

HELP = "Show each GPU's load, memory, temperature and power, and what each framework sees."

# Redraw in place: cursor home, the table, then clear whatever the last frame left below it.
_HOME, _CLEAR_BELOW, _CLEAR_SCREEN = "\x1b[H", "\x1b[J", "\x1b[2J"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the gpulens.status/1 payload")
    parser.add_argument(
        "--watch",
        type=positive_seconds,
        metavar="SECONDS",
        help="refresh every SECONDS until interrupted (with --json: one payload per line)",
    )
    parser.add_argument(
        "--python",
        type=interpreter,
        metavar="INTERPRETER",
        help="probe the frameworks of this interpreter (default: the one running gpulens)",
    )


def run(args: argparse.Namespace) -> int:
    from gpulens.device.frameworks import FrameworkProbeCache
    from gpulens.device.status import StatusSource, format_status_table

    source = StatusSource(probes=FrameworkProbeCache(args.python))
    out = sys.stdout
    redraw = args.watch is not None and not args.json and out.isatty()
    try:
        if redraw:
            out.write(_CLEAR_SCREEN)
        while True:
            # The probe runs once; every later refresh reuses it and re-reads only NVML.
            payload = source.snapshot(wait_for_frameworks=True)
            if args.json:
                text = json.dumps(payload, indent=None if args.watch else 2)
            else:
                text = format_status_table(payload)
            if redraw:
                out.write(_HOME + text + "\n" + _CLEAR_BELOW)
            else:
                out.write(text + "\n")
                if args.watch is not None and not args.json:
                    out.write("\n")
            out.flush()
            if args.watch is None:
                return 0
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return 0  # Ctrl-C is how --watch ends
    finally:
        source.close()

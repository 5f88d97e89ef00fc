"""`gpulens doctor`: check the GPU stack end to end and say how to fix what is wrong."""

from __future__ import annotations

import argparse
import json
import sys

from gpulens.commands._usage import interpreter

HELP = "Check driver, CUDA and frameworks, run a short GPU smoke test, and suggest fixes."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the gpulens.doctor/1 report")
    parser.add_argument(
        "--python",
        type=interpreter,
        metavar="INTERPRETER",
        help="check the frameworks of this interpreter (default: the one running gpulens)",
    )
    parser.add_argument("--no-smoke", action="store_true", help="skip the timed GPU smoke test")


def run(args: argparse.Namespace) -> int:
    from gpulens.device.doctor import diagnose, format_doctor_report, gather_facts

    facts = gather_facts(args.python, smoke=not args.no_smoke)
    findings = diagnose(facts)
    if args.json:
        json.dump({**facts, "findings": findings}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_doctor_report(facts, findings))
    # Exit 1 only for errors: a machine without a GPU is a warning, not a broken setup.
    return 1 if any(f["severity"] == "error" for f in findings) else 0

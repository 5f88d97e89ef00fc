"""The profiled process: `python -m gpulens.profiler.child JOB.json OUT.json`.

Runs the setup chunks (preamble, earlier cells) plainly, then profiles the target chunk,
each compiled with the file's name and real line numbers, in one `__main__` namespace.
Writes the payload to OUT.json whatever the cell does: raises, calls sys.exit, or is
interrupted by the runner's SIGINT at the timeout. Only os._exit and crashes leave no
payload, and the runner reports those. Imports nothing but the standard library and
gpulens.profiler, so any interpreter with the user's packages can run it.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import time
from typing import Any

from gpulens.analysis.source import source_lines


def compile_chunk(source: str, path: str, first_line: int) -> Any:
    """Compiled with blank lines ahead, so tracebacks and events carry the file's lines."""
    return compile("\n" * (first_line - 1) + source, path, "exec")


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    from gpulens.profiler.attribution import attribute_records
    from gpulens.profiler.capture import describe_error, profile_code
    from gpulens.profiler.cells import last_line_of
    from gpulens.profiler.report import build_payload, failed_payload

    path = job["path"]
    target = job["target"]
    source_info = {
        "path": path,
        "cell": target.get("cell"),
        "first_line": target["first_line"],
        "last_line": last_line_of(target["first_line"], target["source"]),
    }
    code_lines = source_lines(target["source"])
    sys.argv = [path, *job.get("args", [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    for chunk in job.get("setup", []):
        try:
            exec(compile_chunk(chunk["source"], path, chunk["first_line"]), namespace)
        except BaseException as error:
            detail = describe_error(error, path)
            at = f" at line {detail['line']}" if detail["line"] else ""
            reason = f"{detail['type']}: {detail['message']}"
            return failed_payload(
                source_info,
                f"the code before the profiled cell failed{at}: {reason}",
                "SetupError",
                code=code_lines,
            )
    try:
        code = compile_chunk(target["source"], path, target["first_line"])
    except SyntaxError as error:
        return failed_payload(
            source_info, f"line {error.lineno}: {error.msg}", "SyntaxError", code=code_lines
        )
    started = time.perf_counter()
    capture = profile_code(code, namespace, job.get("backend", "auto"))
    wall = time.perf_counter() - started
    attributed = attribute_records(capture.events, capture.records)
    timings = dict(capture.timings)
    timings["attribute_s"] = time.perf_counter() - started - wall
    return build_payload(
        attributed,
        source=source_info,
        backend=capture.backend,
        gpus=capture.gpus,
        warnings=capture.warnings,
        wall_s=timings.get("cell_s", wall),
        error=capture.error,
        code=code_lines,
        timings=timings,
    )


def main(argv: list[str]) -> int:
    job_path, out_path = argv[1], argv[2]
    with open(job_path, encoding="utf-8") as handle:
        job = json.load(handle)
    payload = run_job(job)
    partial = out_path + ".part"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(partial, out_path)  # the runner never reads half a payload
    return 0


if __name__ == "__main__":
    status = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: threads the cell left running must not hold the run open.
    os._exit(status)

"""`python -P -m gpulens.profiler.launch FOLDER`: torch's own launcher for the ranks of a profile.

Started by `gpulens.profiler.ranks` in FOLDER (the run's private folder, also its working
directory), it runs `torch.distributed.run` in this process with `--standalone` (a rendezvous
on a free local port) and `--no-python`, so each rank is `python -P -u -m
gpulens.profiler.child --rank-job FOLDER`, and torch's logs go under FOLDER. Each rank writes
its profile there; this writes `launch-result.json`: whether torch could launch at all, and for
each rank that failed, its exit status or signal (a rank that crashes sends no profile).

Standard input is the runner's pipe, never written: its end means the runner is gone, and this
process then ends at once. The ranks inherit the same pipe and end themselves the same way (torch
starts each rank in a session of its own, out of reach of a signal to this process group).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any


def watch_runner() -> None:
    """Ends this process when the runner's end of standard input closes."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os._exit(1)


def write_result(folder: str, result: dict[str, Any]) -> None:
    path = os.path.join(folder, "launch-result.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.replace(path + ".tmp", path)


def describe_failure(failure: Any) -> str:
    """What happened to a rank torch saw fail, in words."""
    code = getattr(failure, "exitcode", None)
    if isinstance(code, int) and code < 0:
        try:
            return f"it was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"it was killed by signal {-code}"
    return f"it exited with status {code} (a crash, os._exit or a failure before its cell)"


def launch_arguments(folder: str, spec: dict[str, Any]) -> list[str]:
    """torch.distributed.run's arguments: N ranks of the gpulens child, on a free local port."""
    return [
        "--standalone",
        f"--nproc-per-node={int(spec['nproc_per_node'])}",
        f"--log-dir={os.path.join(folder, 'logs')}",
        "--no-python",
        str(spec["python"]),
        "-P",
        "-u",
        "-m",
        "gpulens.profiler.child",
        "--rank-job",
        folder,
    ]


def main(folder: str) -> int:
    threading.Thread(target=watch_runner, name="gpulens-runner", daemon=True).start()
    with open(os.path.join(folder, "launch.json"), encoding="utf-8") as handle:
        spec = json.load(handle)
    try:
        from torch.distributed import run
        from torch.distributed.elastic.multiprocessing.api import SignalException
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    except ImportError as error:
        write_result(
            folder,
            {"error": f"torch.distributed could not be imported in {sys.executable} ({error})"},
        )
        return 3
    try:
        run.run(run.parse_args(launch_arguments(folder, spec)))
    except ChildFailedError as error:
        failures = {
            str(rank): describe_failure(failure) for rank, failure in error.failures.items()
        }
        write_result(folder, {"failures": failures})
        return 1
    except SignalException as error:  # the runner stopped the job; torch stopped the ranks
        write_result(folder, {"failures": {}, "stopped": str(error)})
        return 1
    except Exception as error:  # the launcher itself (rendezvous, a bad argument)
        write_result(folder, {"error": f"torch.distributed.run failed: {error}"})
        return 2
    write_result(folder, {"failures": {}})
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    status = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)

"""Record what `%%gpulens` displays for a notebook cell, run in a real IPython kernel.

On a machine with a GPU:

    python scripts/record_notebook_profile.py examples/pitfalls.ipynb 3 OUT.profile.json

runs the notebook's code cells before code cell 3 as they are, then cell 3 under
`%%gpulens --backend cupti`, and writes the `application/vnd.gpulens.profile+json` payload
the kernel displayed (the fixture the editor clients' drawing tests replay).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MIME = "application/vnd.gpulens.profile+json"


def code_cells(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def execute(client: Any, code: str, timeout: float = 600) -> list[dict[str, Any]]:
    """Run ``code``; the display bundles it showed. Raises on an error reply."""
    msg_id = client.execute(code)
    bundles: list[dict[str, Any]] = []
    while True:
        message = client.get_iopub_msg(timeout=timeout)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind in ("display_data", "execute_result"):
            bundles.append(content["data"])
        elif kind == "stream":
            sys.stderr.write(content["text"])
        elif kind == "error":
            sys.stderr.write("\n".join(content["traceback"]) + "\n")
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=timeout)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"the cell failed: {reply['content'].get('ename')}")
    return bundles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("cell", type=int, help="the code cell to profile, counted from 1")
    parser.add_argument("output", type=Path)
    parser.add_argument("--backend", default="cupti")
    args = parser.parse_args()

    from jupyter_client.manager import start_new_kernel

    cells = code_cells(args.notebook)
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for source in cells[: args.cell - 1]:
            execute(client, source)
        execute(client, "%load_ext gpulens")
        bundles = execute(client, f"%%gpulens --backend {args.backend}\n{cells[args.cell - 1]}")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    payloads = [b[MIME] for b in bundles if MIME in b]
    if not payloads:
        print("the kernel displayed no gpulens profile", file=sys.stderr)
        return 1
    args.output.write_text(json.dumps(payloads[-1], indent=1) + "\n", encoding="utf-8")
    payload = payloads[-1]
    print(f"{args.output}: backend {payload['backend']}, {len(payload['lines'])} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Whether two versions of gpulens publish the same diagnostics for a profiled document, on
the latency benchmark's keystrokes.

    .venv/bin/python scripts/compare_profiled_publications.py SERVER_DIR [--keystrokes 82]

Drives this gpulens and the one in SERVER_DIR (e.g. `git archive <rev> server | tar -x -C
/tmp/before`, then `/tmp/before/server`) as `benchmarks/lsp_latency.py` does, with its
files and its profiles (`profiled_file`), typing its statement one keystroke at a time;
each keystroke waits for the diagnostics of its version, so every version is published,
and the two servers' publications are compared version by version (the JSON the client
received). Prints the first difference, or how many publications were the same; exits 1
where they differ.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from lsp_latency import (
    GPULENS,
    LARGE_CHARS,
    TYPED,
    Client,
    generated_file,
    profiled_file,
    typing_script,
)
from versions import built, versions

# what each version of each document published last: (uri, version) -> diagnostics
Publications = dict[tuple[str, int], list[dict[str, Any]]]


class RecordingClient(Client):
    """The benchmark's client, keeping each version's last diagnostics."""

    def __init__(self) -> None:
        super().__init__()
        self.publications: Publications = {}

    def _handle(self, arrived: float, message: dict[str, Any]) -> None:
        if message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            if params.get("version") is not None:
                self.publications[params["uri"], params["version"]] = params["diagnostics"]
        super()._handle(arrived, message)


async def typed_publications(env: dict[str, str], keystrokes: int) -> Publications:
    client = RecordingClient()
    await client.initialize(await client.start(GPULENS, env))
    try:
        for name, text in (
            ("medium", generated_file(lines=2000)),
            ("large", generated_file(chars=LARGE_CHARS)),
        ):
            uri = f"file:///compare/{name}.py"
            shown, payloads = profiled_file(text)
            client.open(uri, shown)
            await client.published(uri, 1)
            for payload in payloads:
                await client.show_profile(uri, payload)
            await client.measured(uri)
            line, strokes = typing_script(shown, keystrokes)
            version = 2
            client.change(uri, version, line, 0, text=" " * strokes[0][1] + "\n", drop=0)
            await client.published(uri, version)
            for char, column in strokes:
                version += 1
                client.change(uri, version, line, column, text=char, drop=0 if char else 1)
                await client.published(uri, version, timeout=600)
                print(f"{name} v{version}", end="\r", file=sys.stderr)
    finally:
        await client.stop()
    return client.publications


async def compare(server_dir: str, keystrokes: int) -> int:
    found: dict[str, Publications] = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, path in versions(server_dir):
            env = built(path, f"{folder}/{label}", bytecode=True)
            found[label] = await typed_publications(env, keystrokes)
    ours, theirs = found["gpulens"], found["compared"]
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            print(f"{key[0]} version {key[1]} differs:")
            print(json.dumps({"gpulens": ours.get(key), "compared": theirs.get(key)})[:4000])
            return 1
    measured = sum(
        sum("in the last profile" in d["message"] for d in diagnostics)
        for diagnostics in ours.values()
    )
    print(
        f"the same: {len(ours)} publications (documents and versions), "
        f"{measured} diagnostics with a profile's figures among them"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server_dir", help="the other gpulens's source folder (its server/)")
    parser.add_argument("--keystrokes", type=int, default=2 * len(TYPED))
    args = parser.parse_args()
    return asyncio.run(compare(args.server_dir, args.keystrokes))


if __name__ == "__main__":
    raise SystemExit(main())

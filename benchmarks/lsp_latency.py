"""Language-server latency as an editor feels it, through a plain stdio client.

    .venv/bin/python benchmarks/lsp_latency.py [--starts 7] [--keystrokes 82] [--seed 0]
                                               [--compare SERVER_DIR] [--typing-only]

Drives `python -P -m gpulens serve` over stdio with a JSON-RPC client of its own (framing
and `json` only, so the client's own decoding costs nothing measurable), and prints:

- start -> `initialize` answered, gpulens against a bare pygls server (a `LanguageServer`
  and nothing else) started the same way with the same interpreter, taking turns, N times
  each: the medians and their ratio (target <= 1.2x); then didOpen of the 2,000-line file
  -> its first diagnostics (target <= 300 ms). Each gpulens runs from a copy of its source
  folder twice: compiled to bytecode, as `pip install` leaves it and as an editor starts it,
  and as source only ("from source"), which this machine's PYTHONDONTWRITEBYTECODE=1 made
  every start of a checkout compile again (the bare server's pygls is installed, compiled);
- typing: one character every 100-200 ms (uniform, seeded) into a function in the middle
  of a file, a statement typed then erased, half of its states not parsing; each didChange
  -> the first publishDiagnostics for that version or a later one (the editor shows the
  later one), p50 and p95, on a 2,000-line file with ~400 findings (target p95 <= 100 ms)
  and on a ~1.95 MB file (target p95 <= 300 ms), with the server's own debounce;
- the same typing into each file once it carries profiles, as after "Profile cell": two
  recorded profiles (`tests/fixtures/profiler`: the demo's training cell on an H200, whose
  `.item()` the analysis finds, and a loop whose sync only the profile shows) shown with
  `gpulens.showProfile` on cells appended to the file, so every analysis merges their
  measured lines; p50, p95 and the ratio to the same file without them;
- codeAction on a finding of the 2,000-line file, p50 and p95;
- anchors measured in the same run: `analyze()` from scratch on the 2,000-line file in this
  process (the machine's speed now), and the load average.

`--compare SERVER_DIR` measures another gpulens beside this one in the same run (e.g. an
older version: `git archive <rev> server | tar -x -C /tmp/before`, then
`--compare /tmp/before/server`): its servers run from copies of that folder, built the
same two ways. `--typing-only` leaves out the starts (and the codeAction rounds stay).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from versions import built, versions

GPULENS = [sys.executable, "-P", "-m", "gpulens", "serve"]
BARE_SERVER = """\
from pygls.lsp.server import LanguageServer

LanguageServer("bare-pygls", "1").start_io()
"""

# One block of a realistic training script (model, data, loop, evaluation, timing), with the
# pitfalls gpulens looks for; repeated with fresh names to reach the wanted length.
BLOCK = """\
class Net{n}(nn.Module):
    def __init__(self, width: int = 128) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def train_{n}(epochs: int = 3) -> float:
    model = Net{n}().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(1024, 64), torch.randint(0, 10, (1024,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    total = 0.0
    for epoch in range(epochs):
        for inputs, labels in loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {{epoch}}: {{total:.3f}}")
    start = time.perf_counter()
    with torch.no_grad():
        scores = model(torch.randn(256, 64, device=device))
    elapsed = time.perf_counter() - start
    print(f"eval took {{elapsed:.4f}} s, best {{scores.max().item():.3f}}")
    return total

"""

HEADER = """\
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

"""
# what is typed, one character at a time, on a new line of the middle function's loop
TYPED = "print(loss.detach().cpu().numpy(), total)"
LARGE_CHARS = 1_950_000  # under the server's 2,000,000-character limit
# after the last keystroke, how long diagnostics of its version may take to come
SETTLE_S = 120
REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "tests" / "fixtures" / "profiler"
# the cells a profiled file ends with: a recorded loop whose `x` comes from elsewhere (the
# analysis cannot tell its device; the profile measured it waiting for the GPU) and the
# demo's training cell (as `gpulens profile --cell 3` saved it on an H200)
DEMO_PAYLOAD = "demo_cell3_h200_payload.json"
SYNC_RECORDING = "item_sync_cupti"


def generated_file(lines: int = 0, chars: int = 0) -> str:
    """A file of at least ``lines`` lines, or of blocks up to ``chars`` characters."""
    parts = [HEADER]
    count, size, n = HEADER.count("\n"), len(HEADER), 0
    while (lines and count < lines) or (chars and size + len(BLOCK) + 16 <= chars):
        block = BLOCK.format(n=n)
        parts.append(block)
        count += block.count("\n")
        size += len(block)
        n += 1
    return "".join(parts)


def profiled_file(text: str) -> tuple[str, list[dict[str, Any]]]:
    """``text`` with the two profiled cells appended, and their profiles as a client hands
    them to `gpulens.showProfile` (each matched to the file by its recorded source)."""
    import gzip

    from gpulens.profiler.recorded import replay

    demo = json.loads((PROFILES / DEMO_PAYLOAD).read_text(encoding="utf-8"))
    with gzip.open(PROFILES / f"{SYNC_RECORDING}.json.gz", "rt", encoding="utf-8") as handle:
        recording = json.load(handle)
    sync = json.loads(json.dumps(replay(recording, SYNC_RECORDING)))
    # the loop first: after the demo's cell its `x` would be known to be on the GPU
    cells = "# %%\n" + recording["source"] + "\n" + "".join(f"{line}\n" for line in demo["code"])
    return f"{text}\n{cells}", [demo, sync]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Document:
    """What the client knows of one open document: when each version was sent and when
    diagnostics covering it arrived."""

    sent: dict[int, float] = field(default_factory=dict)
    answered: dict[int, float] = field(default_factory=dict)  # version -> latency (s)
    published: int = 0  # the newest version published
    count: int = -1  # diagnostics in the newest publication
    measured: int = 0  # of which carry a profile's figures
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


class Table(list[tuple[str, float, float | None]]):
    """The rows measured, each printed as soon as it is measured."""

    def append(self, row: tuple[str, float, float | None]) -> None:
        super().append(row)
        print_row(*row, width=WIDTH)
        sys.stdout.flush()


class Client:
    """A JSON-RPC client over a server's stdin and stdout; stamps each message on arrival."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self.documents: dict[str, Document] = {}
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[tuple[float, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def start(self, command: list[str], env: dict[str, str] | None = None) -> float:
        """Spawns the server; the time it was spawned at."""
        began = time.perf_counter()
        self.process = await asyncio.create_subprocess_exec(
            *command,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())
        return began

    def send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any, timeout: float = 120) -> tuple[float, Any]:
        """(when the answer arrived, its result)."""
        self._next_id += 1
        future: asyncio.Future[tuple[float, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = future
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return await asyncio.wait_for(future, timeout)

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        while True:
            try:
                header = await stream.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = next(
                int(line.split(b":")[1])
                for line in header.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            body = await stream.readexactly(length)
            arrived = time.perf_counter()
            self._handle(arrived, json.loads(body))

    def _handle(self, arrived: float, message: dict[str, Any]) -> None:
        if "id" in message and "method" not in message:
            future = self._waiting.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result((arrived, message.get("result")))
            return
        method, params = message.get("method"), message.get("params") or {}
        if "id" in message:  # a request of the server's: settings are empty, the rest null
            result: Any = None
            if method == "workspace/configuration":
                result = [{} for _ in params.get("items", [])]
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "textDocument/publishDiagnostics":
            document = self.documents.get(params["uri"])
            version = params.get("version")
            if document is None or version is None:
                return
            for sent_version in [v for v in document.sent if v <= version]:
                document.answered.setdefault(
                    sent_version, arrived - document.sent.pop(sent_version)
                )
            document.published = max(document.published, version)
            document.count = len(params["diagnostics"])
            document.measured = sum(
                "in the last profile" in d.get("message", "") for d in params["diagnostics"]
            )
            document.arrived.set()

    async def initialize(self, began: float) -> float:
        """Seconds from spawn (``began``) to the answer to `initialize`."""
        capabilities = {
            "workspace": {"configuration": True},
            "textDocument": {
                "publishDiagnostics": {"versionSupport": True},
                "codeAction": {
                    "codeActionLiteralSupport": {
                        "codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}
                    }
                },
            },
        }
        params = {"processId": os.getpid(), "rootUri": None, "capabilities": capabilities}
        arrived, _ = await self.request("initialize", params)
        self.notify("initialized", {})
        return arrived - began

    def open(self, uri: str, text: str) -> Document:
        document = self.documents[uri] = Document()
        document.sent[1] = time.perf_counter()
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})
        return document

    def change(
        self, uri: str, version: int, line: int, column: int, *, text: str, drop: int
    ) -> None:
        """Replaces ``drop`` characters at (line, column) by ``text``."""
        document = self.documents[uri]
        document.sent[version] = time.perf_counter()
        start = {"line": line, "character": column}
        end = {"line": line, "character": column + drop}
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": start, "end": end}, "text": text}],
            },
        )

    async def show_profile(self, uri: str, payload: dict[str, Any]) -> None:
        """`gpulens.showProfile`: ``payload`` drawn on the open document, as a client that
        hands the server a saved profile does."""
        params = {"command": "gpulens.showProfile", "arguments": [{"uri": uri, "payload": payload}]}
        await self.request("workspace/executeCommand", params)

    async def measured(self, uri: str, timeout: float = 120) -> int:
        """Waits for a publication that carries a profile's figures; how many it carries."""
        document = self.documents[uri]
        await self._until(
            document,
            lambda: document.measured > 0,
            timeout,
            f"no profile's figures published for {uri}",
        )
        return document.measured

    async def published(self, uri: str, version: int, timeout: float = 120) -> None:
        document = self.documents[uri]
        await self._until(
            document,
            lambda: document.published >= version,
            timeout,
            f"no diagnostics for {uri} v{version}",
        )

    @staticmethod
    async def _until(
        document: Document, done: Callable[[], bool], timeout: float, failure: str
    ) -> None:
        """Waits for publications of ``document`` until ``done()``; TimeoutError past
        ``timeout`` seconds."""
        deadline = time.perf_counter() + timeout
        while not done():
            document.arrived.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(failure)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(document.arrived.wait(), remaining)

    async def stop(self) -> None:
        assert self.process is not None
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()


async def start_once(
    command: list[str], text: str | None, env: dict[str, str] | None = None
) -> tuple[float, float | None]:
    """(spawn -> initialize answered, didOpen -> first diagnostics or None) for one start."""
    client = Client()
    began = await client.start(command, env)
    try:
        ready = await client.initialize(began)
        first = None
        if text is not None:
            document = client.open("file:///bench/opened.py", text)
            await client.published("file:///bench/opened.py", 1)
            first = document.answered[1]
        return ready, first
    finally:
        await client.stop()


def typing_script(text: str, keystrokes: int) -> tuple[int, list[tuple[str, int]]]:
    """Where to type (a new line in the loop of the function nearest the middle) and the
    keystrokes: (inserted character, or "" for a backspace; its column)."""
    lines = text.splitlines()
    middle = len(lines) // 2
    line = next(i for i in range(middle, len(lines)) if lines[i].strip() == "optimizer.step()")
    indent = len(lines[line]) - len(lines[line].lstrip())
    strokes: list[tuple[str, int]] = []
    typed = 0
    forward = True
    while len(strokes) < keystrokes:
        if forward:
            strokes.append((TYPED[typed], indent + typed))
            typed += 1
            forward = typed < len(TYPED)
        else:
            typed -= 1
            strokes.append(("", indent + typed))
            forward = typed == 0
    return line, strokes


async def typing_latencies(
    client: Client,
    uri: str,
    text: str,
    keystrokes: int,
    rng: random.Random,
    *,
    profiles: Sequence[dict[str, Any]] = (),
) -> tuple[list[float], int]:
    """Latencies of each keystroke typed into ``text``, and the findings published first
    (with ``profiles`` shown on it first, once their figures are published)."""
    document = client.open(uri, text)
    await client.published(uri, 1)
    for payload in profiles:
        await client.show_profile(uri, payload)
    if profiles:
        await client.measured(uri)
    findings = document.count
    line, strokes = typing_script(text, keystrokes)
    indent = " " * strokes[0][1]
    version = 2  # a new, indented empty line to type on (not timed)
    client.change(uri, version, line, 0, text=indent + "\n", drop=0)
    await client.published(uri, version)
    document.answered.clear()
    for char, column in strokes:
        version += 1
        client.change(uri, version, line, column, text=char, drop=0 if char else 1)
        await asyncio.sleep(rng.uniform(0.100, 0.200))
    # what is not answered by then counts as never answered
    with contextlib.suppress(TimeoutError):
        await client.published(uri, version, timeout=SETTLE_S)
    unanswered = [math.inf for v in document.sent if v > 2]
    return [*document.answered.values(), *unanswered], findings


async def code_action_latencies(client: Client, uri: str, text: str, rounds: int) -> list[float]:
    """codeAction at each `.item()` of the file in turn: the light bulb on a finding."""
    spots = [
        (i, line.index(".item()")) for i, line in enumerate(text.splitlines()) if ".item()" in line
    ]
    latencies = []
    for round_ in range(rounds):
        line, column = spots[round_ % len(spots)]
        where = {"line": line, "character": column}
        params = {
            "textDocument": {"uri": uri},
            "range": {"start": where, "end": where},
            "context": {"diagnostics": []},
        }
        sent = time.perf_counter()
        arrived, _ = await client.request("textDocument/codeAction", params)
        latencies.append(arrived - sent)
    return latencies


def anchor_analyze_s(text: str, rounds: int = 5) -> float:
    from gpulens.analysis import analyze

    analyze(text)  # imports and first-call costs out of the measurement
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        analyze(text)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


Row = tuple[str, float, float | None]


def start_rows(
    rows: Table,
    builds: dict[tuple[str, bool], dict[str, str]],
    theirs: list[float],
    ours: dict[tuple[str, bool], list[float]],
    firsts: dict[tuple[str, bool], list[float]],
) -> None:
    bare_median = statistics.median(theirs)
    rows.append(("start -> initialize answered, bare pygls server, median", bare_median, None))
    for build in builds:
        name = build_name(*build)
        median = statistics.median(ours[build])
        rows.append((f"start -> initialize answered, {name}, median", median, None))
        rows.append(
            (f"start: {name} over bare pygls (ratio of medians)", median / bare_median, 1.2)
        )
        rows.append(
            (
                f"didOpen -> first diagnostics, 2,000 lines, {name}, median",
                statistics.median(firsts[build]),
                0.300,
            )
        )


def build_name(label: str, bytecode: bool) -> str:
    return label if bytecode else f"{label} from source"


async def run(
    starts: int, keystrokes: int, seed: int, compare: str | None, typing_only: bool = False
) -> list[Row]:
    rows = Table()
    print(f"{'measure':<{WIDTH}}  {'value':>10}  {'target':>8}  {'ratio':>6}")
    medium, large = generated_file(lines=2000), generated_file(chars=LARGE_CHARS)
    labels = [label for label, _ in versions(compare)]

    with tempfile.TemporaryDirectory() as folder:
        builds = {
            (label, bytecode): built(path, f"{folder}/{label}", bytecode=bytecode)
            for label, path in versions(compare)
            for bytecode in (True, False)
        }
        bare_path = Path(folder) / "bare_server.py"
        bare_path.write_text(BARE_SERVER)
        bare = [sys.executable, "-P", str(bare_path)]
        theirs: list[float] = []
        ours: dict[tuple[str, bool], list[float]] = {build: [] for build in builds}
        firsts: dict[tuple[str, bool], list[float]] = {build: [] for build in builds}
        turns: list[tuple[str, bool] | None] = [None, *builds]  # None: the bare server
        for round_ in range(0 if typing_only else starts):
            # taking turns, in an order rotated every round: a load spike, or the slot right
            # after another server's exit, hits each alike
            shift = round_ % len(turns)
            for build in turns[shift:] + turns[:shift]:
                if build is None:
                    theirs.append((await start_once(bare, None))[0])
                    continue
                ready, first = await start_once(GPULENS, medium, builds[build])
                ours[build].append(ready)
                firsts[build].append(first or 0.0)
        if not typing_only:
            start_rows(rows, builds, theirs, ours, firsts)
        await typing_rows(
            rows, labels, builds, medium=medium, large=large, keystrokes=keystrokes, seed=seed
        )

    anchor = anchor_analyze_s(medium)
    rows.append(("anchor: analyze() from scratch, 2,000 lines, in-process median", anchor, None))
    return rows


async def typing_rows(
    rows: Table,
    labels: list[str],
    builds: dict[tuple[str, bool], dict[str, str]],
    *,
    medium: str,
    large: str,
    keystrokes: int,
    seed: int,
) -> None:
    """Typing and codeAction latencies of each version, compiled (as installed): into each
    file as it is, then into each carrying profiles."""
    cases: list[tuple[str, str, str, float, list[dict[str, Any]]]] = []
    for text, target in ((medium, 0.100), (large, 0.300)):
        name = "2,000 lines" if text is medium else f"{len(text) / 1e6:.2f} MB"
        cases.append((text, name, "", target, []))
        shown, payloads = profiled_file(text)
        cases.append((shown, name, ", profiled", target, payloads))
    for label in labels:
        env = builds[(label, True)]
        rng = random.Random(seed)  # each server gets the same keystroke intervals
        client = Client()
        await client.initialize(await client.start(GPULENS, env))
        plain: dict[str, float] = {}
        try:
            for index, (text, name, kind, target, payloads) in enumerate(cases):
                uri = f"file:///bench/{label}/typed{index}.py"
                latencies, findings = await typing_latencies(
                    client, uri, text, keystrokes, rng, profiles=payloads
                )
                p95 = percentile(latencies, 95)
                rows.append(
                    (
                        f"typing -> diagnostics, {name}{kind}, {label}, p50",
                        percentile(latencies, 50),
                        None,
                    )
                )
                rows.append((f"typing -> diagnostics, {name}{kind}, {label}, p95", p95, target))
                rows.append(
                    (
                        f"findings published for the {name} file{kind}, {label}",
                        float(findings),
                        None,
                    )
                )
                if payloads:
                    document = client.documents[uri]
                    rows.append(
                        (
                            f"findings with a profile's figures, last publication, {label}",
                            float(document.measured),
                            None,
                        )
                    )
                    rows.append(
                        (
                            f"typing, {name}: profiled over plain p95 (ratio), {label}",
                            p95 / plain[name],
                            None,
                        )
                    )
                    continue
                plain[name] = p95
                if text is medium:
                    actions = await code_action_latencies(client, uri, medium, 40)
                    rows.append(
                        (
                            f"codeAction on a finding, 2,000 lines, {label}, p95",
                            percentile(actions, 95),
                            0.010,
                        )
                    )
        finally:
            await client.stop()


WIDTH = 76


def print_row(name: str, value: float, target: float | None, width: int) -> None:
    if name.startswith("findings"):
        print(f"{name:<{width}}  {value:>10.0f}")
        return
    if "ratio" in name:
        verdict = "" if target is None else ("ok" if value <= target else "OVER")
        print(f"{name:<{width}}  {value:>9.2f}x  {target or 0:>7.2f}x  {verdict}")
        return
    if math.isinf(value):
        shown = "no answer"
    else:
        shown = f"{value * 1000:>8.1f}ms" if value < 10 else f"{value:>9.2f}s"
    if target is None:
        print(f"{name:<{width}}  {shown:>10}")
        return
    ratio = value / target
    verdict = "ok" if ratio <= 1 else "OVER"
    print(f"{name:<{width}}  {shown:>10}  {target * 1000:>6.0f}ms  {ratio:>5.2f}x {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7, help="starts of each server (7)")
    parser.add_argument(
        "--keystrokes",
        type=int,
        default=2 * len(TYPED),
        help=f"keystrokes per file ({2 * len(TYPED)}: the statement typed, then erased)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the typing intervals")
    parser.add_argument("--compare", metavar="SERVER_DIR", help="also measure this gpulens")
    parser.add_argument("--typing-only", action="store_true", help="leave out the starts")
    args = parser.parse_args()
    asyncio.run(run(args.starts, args.keystrokes, args.seed, args.compare, args.typing_only))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average over 1, 5, 15 min: {load} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

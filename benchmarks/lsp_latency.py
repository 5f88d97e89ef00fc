"""Language-server latency through a real client, against the budgets in DESIGN.md.

    .venv/bin/python benchmarks/lsp_latency.py [--rounds 60]

Drives `python -m gpulens serve` over stdio with pygls' LanguageClient and measures:
start -> initialize answered; didChange -> publishDiagnostics (p50/p95) on generated
PyTorch files of 200 and 2,000 lines, with the debounce set to 0 through
initializationOptions and with the default debounce; codeAction p95 on the 2,000-line file.
The anchor is `analyze()` on the same text in this process, measured in the same run: what
the server adds on top of the analysis is the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

SERVER = [sys.executable, "-m", "gpulens", "serve"]

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


def generated_file(lines: int) -> str:
    parts = [HEADER]
    count = HEADER.count("\n")
    n = 0
    while count < lines:
        block = BLOCK.format(n=n)
        parts.append(block)
        count += block.count("\n")
        n += 1
    return "".join(parts)


@dataclass
class Measured:
    name: str
    values_s: list[float]

    def p(self, q: float) -> float:
        ordered = sorted(self.values_s)
        index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
        return ordered[index]


class BenchClient(LanguageClient):
    def __init__(self) -> None:
        super().__init__("gpulens-bench", "1")
        self.published: dict[tuple[str, int | None], float] = {}
        self.diagnostic_counts: dict[str, int] = {}
        self.arrived = asyncio.Event()


def make_client() -> BenchClient:
    client = BenchClient()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(ls: BenchClient, params: types.PublishDiagnosticsParams) -> None:
        ls.published[(params.uri, params.version)] = time.perf_counter()
        ls.diagnostic_counts[params.uri] = len(params.diagnostics)
        ls.arrived.set()

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def on_configuration(ls: BenchClient, params: types.ConfigurationParams) -> list[Any]:
        return [{} for _ in params.items]

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(ls: BenchClient, params: types.LogMessageParams) -> None:
        pass

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def on_show(ls: BenchClient, params: types.ShowMessageParams) -> None:
        pass

    @client.feature("gpulens/status")
    def on_status(ls: BenchClient, params: Any) -> None:
        pass

    return client


CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        configuration=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
    ),
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(
                    value_set=["quickfix", "refactor.rewrite", "source.fixAll"]
                )
            )
        ),
    ),
)


async def start(delay_ms: float | None) -> tuple[BenchClient, float]:
    """A started, initialized server, and the seconds from spawn to its initialize answer."""
    client = make_client()
    began = time.perf_counter()
    await client.start_io(*SERVER)
    options = None if delay_ms is None else {"diagnosticDelayMs": delay_ms}
    await client.initialize_async(
        types.InitializeParams(
            capabilities=CAPABILITIES, root_uri=None, initialization_options=options
        )
    )
    ready = time.perf_counter() - began
    client.initialized(types.InitializedParams())
    return client, ready


async def stop(client: BenchClient) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def wait_published(client: BenchClient, uri: str, version: int, timeout: float = 30) -> float:
    deadline = time.perf_counter() + timeout
    while (uri, version) not in client.published:
        client.arrived.clear()
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"no diagnostics for {uri} v{version}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(client.arrived.wait(), remaining)
    return client.published[(uri, version)]


def open_doc(client: BenchClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )


async def change_latencies(client: BenchClient, uri: str, text: str, rounds: int) -> list[float]:
    """didChange -> publishDiagnostics, one keystroke at a time (type a char, delete it)."""
    open_doc(client, uri, text)
    await wait_published(client, uri, 1)
    # a comment line near the middle: the edit keeps the file valid and its findings stable
    line = text.count("\n") // 2
    latencies = []
    for round_ in range(rounds):
        version = round_ + 2
        typing = round_ % 2 == 0
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=line, character=0),
                end=types.Position(line=line, character=0 if typing else 1),
            ),
            text="#" if typing else "",
        )
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[change],
            )
        )
        latencies.append(await wait_published(client, uri, version) - sent)
        await asyncio.sleep(0.005)
    return latencies


async def code_action_latencies(
    client: BenchClient, uri: str, text: str, rounds: int, *, selection_lines: int = 0
) -> list[float]:
    """codeAction at each `.item()` of the file in turn: the light bulb on a finding (an
    empty range), or a selection of ``selection_lines`` lines from there (the refactors)."""
    lines = text.splitlines()
    spots = [(i, line.index(".item()")) for i, line in enumerate(lines) if ".item()" in line]
    latencies = []
    for round_ in range(rounds):
        line, column = spots[round_ % len(spots)]
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=line, character=column),
                end=types.Position(line=line + selection_lines, character=column),
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
        sent = time.perf_counter()
        await client.text_document_code_action_async(params)
        latencies.append(time.perf_counter() - sent)
    return latencies


def anchor_analyze_s(text: str, rounds: int = 20) -> float:
    from gpulens.analysis import analyze

    analyze(text)  # imports and first-call costs out of the measurement
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        analyze(text)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


async def run(rounds: int) -> list[tuple[str, float, float | None]]:
    rows: list[tuple[str, float, float | None]] = []
    starts = []
    for _ in range(5):
        client, ready = await start(delay_ms=0)
        starts.append(ready)
        await stop(client)
    rows.append(("start -> initialize answered, p50 (s)", statistics.median(starts), 0.5))
    rows.append(("start -> initialize answered, max (s)", max(starts), None))

    small, large = generated_file(200), generated_file(2000)
    client, _ = await start(delay_ms=0)
    try:
        for name, text in (("200", small), ("2,000", large)):
            measured = Measured(
                name, await change_latencies(client, f"file:///bench/{name}.py", text, rounds)
            )
            target = 0.020 if name == "2,000" else None
            rows.append(
                (
                    f"didChange -> diagnostics, {name} lines, debounce 0, p50 (s)",
                    measured.p(50),
                    None,
                )
            )
            rows.append(
                (
                    f"didChange -> diagnostics, {name} lines, debounce 0, p95 (s)",
                    measured.p(95),
                    target,
                )
            )
        uri = "file:///bench/2,000.py"
        findings = client.diagnostic_counts.get(uri, 0)
        actions = Measured(
            "codeAction", await code_action_latencies(client, uri, large, rounds * 2)
        )
        rows.append(("codeAction on a finding, 2,000 lines, p50 (s)", actions.p(50), None))
        rows.append(("codeAction on a finding, 2,000 lines, p95 (s)", actions.p(95), 0.010))
        refactors = Measured(
            "refactors", await code_action_latencies(client, uri, large, 10, selection_lines=3)
        )
        rows.append(
            ("codeAction on a 3-line selection (refactors), p50 (s)", refactors.p(50), None)
        )
    finally:
        await stop(client)

    client, _ = await start(delay_ms=None)
    try:
        measured = Measured(
            "debounced", await change_latencies(client, "file:///bench/d.py", large, rounds // 2)
        )
        rows.append(
            (
                "didChange -> diagnostics, 2,000 lines, default debounce, p95 (s)",
                measured.p(95),
                None,
            )
        )
    finally:
        await stop(client)

    rows.append(
        ("anchor: analyze() in-process, 2,000 lines, median (s)", anchor_analyze_s(large), None)
    )
    rows.append(("findings published for the 2,000-line file", float(findings), None))
    return rows


def print_table(rows: list[tuple[str, float, float | None]]) -> None:
    width = max(len(name) for name, _, _ in rows)
    print(f"{'measure':<{width}}  {'value':>10}  {'target':>8}  {'ratio':>6}")
    for name, value, target in rows:
        if name.startswith("findings"):
            print(f"{name:<{width}}  {value:>10.0f}")
            continue
        shown = f"{value * 1000:>8.2f}ms" if value < 1 else f"{value:>9.3f}s"
        if target is None:
            print(f"{name:<{width}}  {shown:>10}")
        else:
            ratio = value / target
            verdict = "ok" if ratio <= 1 else "OVER"
            print(
                f"{name:<{width}}  {shown:>10}  {target * 1000:>6.0f}ms  {ratio:>5.2f}x {verdict}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="edits per file size (default 60)")
    args = parser.parse_args()
    print_table(asyncio.run(run(args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

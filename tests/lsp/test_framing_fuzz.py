"""Malformed frames never make the server deaf, nor end it.

The real `gpulens serve` is sent bytes over stdio: malformed frames of every kind (bad and
huge lengths, bodies shorter or longer than announced, garbage headers, bodies that are not
JSON or not messages, missing blank lines, ...) interleaved with valid requests. Every valid
request must be answered, nothing malformed may run, and the process must stay up and small.
The decoder is also fuzzed alone, with the stream cut at random places.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_helpers import RawServer

from gpulens.lsp.wire import Body, FrameDecoder, FramingError

MALFORMED_FRAMES = 1000


def frame(body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return header % len(body) + body


def hover(request_id: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "textDocument/hover",
            "params": {
                "textDocument": {"uri": "file:///gpulens-tests/framing/nowhere.py"},
                "position": {"line": 0, "character": 0},
            },
        }
    ).encode()


# the ways a valid frame may be written: all must be read
VALID_HEADERS = [
    b"Content-Length: %d\r\n\r\n",
    b"content-length: %d\r\n\r\n",
    b"CONTENT-LENGTH:%d\r\n\r\n",
    b"Content-Length:   %d  \r\n\r\n",
    b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
    b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
    b"X-Unknown: yes\r\nContent-Length: %d\r\n\r\n",
    b"\r\nContent-Length: %d\r\n\r\n",
]


def valid_frame(rng: random.Random, request_id: str) -> bytes:
    return frame(hover(request_id), rng.choice(VALID_HEADERS))


def _garbage(rng: random.Random, size: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(size))


def malformed_frame(rng: random.Random, number: int) -> bytes:
    """One malformed frame; where it holds a request, its id starts with "bad-"."""
    body = hover(f"bad-{number}")
    kinds: list[Callable[[], bytes]] = [
        lambda: b"Content-Length: abc\r\n\r\n{}",
        lambda: b"Content-Length: -5\r\n\r\n{}",
        lambda: b"Content-Length: 1e3\r\n\r\n" + body,
        lambda: b"Content-Length: 1000000000000\r\n\r\n" + body,
        lambda: b"Content-Length: 99999999999999999999999999\r\n\r\n" + body,
        # announced more than sent: the next frame arrives inside the body
        lambda: b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randint(1, 900)) + body,
        lambda: b"Content-Length: %d\r\n\r\n" % rng.randint(1, 500),
        # announced less than sent
        lambda: b"Content-Length: %d\r\n\r\n" % rng.randint(1, len(body) - 1) + body,
        lambda: b"Content-Length: 0\r\n\r\n",
        lambda: b"Content-Length: %d\r\n" % len(body) + body,  # no blank line
        lambda: b"Content-Length: %d\n" % len(body) + body,
        lambda: b"Content-Length %d\r\n\r\n" % len(body) + body,  # no colon
        lambda: b"this is not a header\r\n\r\n" + body,
        lambda: b"Content-Type: application/json\r\n\r\n" + body,  # no length
        lambda: b"X-Long: " + b"a" * rng.randint(9_000, 30_000) + b"\r\n\r\n",
        lambda: _garbage(rng, rng.randint(1, 300)),
        lambda: frame(_garbage(rng, rng.randint(1, 300))),
        lambda: frame(b"\xff\xfe\x00 not utf-8 \xc3\x28"),
        lambda: frame(b'{"jsonrpc": "2.0", "id": "bad-%d", "method": ' % number),
        lambda: frame(b"[" * 100_000),
        lambda: frame(b"{}"),
        lambda: frame(b"[]"),
        lambda: frame(b"42"),
        lambda: frame(b'"a string"'),
        lambda: frame(b"null"),
        lambda: frame(b"true"),
        lambda: frame(b'{"jsonrpc": "1.0", "id": "bad-%d", "method": "shutdown"}' % number),
        lambda: frame(b'{"id": "bad-%d", "method": "shutdown"}' % number),
        lambda: frame(b'{"jsonrpc": "2.0", "id": "bad-%d", "method": 5}' % number),
        lambda: frame(b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "shutdown"}'),
        lambda: frame(b'{"jsonrpc": "2.0", "id": "bad-%d"}' % number),
        lambda: frame(b'{"jsonrpc": "2.0", "id": 9999999, "result": {"x": 1}}'),
        # batches are not LSP: refused, never run
        lambda: frame(b'[{"jsonrpc": "2.0", "id": "bad-%d", "method": "shutdown"}]' % number),
        lambda: b"\r\n" * rng.randint(1, 5),
        lambda: b"\x00" * rng.randint(1, 50),
    ]
    return rng.choice(kinds)()


def answered_ids(messages: list[dict]) -> dict[object, dict]:
    return {m["id"]: m for m in messages if "id" in m and "method" not in m}


def test_every_valid_request_is_answered_among_1000_malformed_frames() -> None:
    rng = random.Random(11)
    server = RawServer()
    try:
        server.initialize()
        stream = bytearray()
        wanted = []
        for number in range(MALFORMED_FRAMES):
            stream += malformed_frame(rng, number)
            wanted.append(f"ok-{number}")
            stream += valid_frame(rng, wanted[-1])
        # written in pieces of every size, as a pipe delivers them
        offset = 0
        while offset < len(stream):
            size = rng.choice([1, 7, 100, 4096, 65536])
            server.write(bytes(stream[offset : offset + size]))
            offset += size

        last = wanted[-1]
        received = answered_ids(server.collect(lambda m: m.get("id") == last, timeout=60))
        missing = [request_id for request_id in wanted if request_id not in received]
        assert not missing, f"{len(missing)} valid requests went unanswered: {missing[:10]}"
        assert all(received[i].get("result", "x") is None for i in wanted)
        # nothing malformed ran: no request with a "bad-" id was answered with a result
        ran = [i for i, m in received.items() if str(i).startswith("bad-") and "result" in m]
        assert not ran, ran
        assert server.proc.poll() is None
        assert server.request("shutdown")["result"] is None
        server.notify("exit")
        assert server.proc.wait(timeout=10) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_terabyte_content_length_is_skipped_without_memory() -> None:
    server = RawServer()
    try:
        server.initialize()
        server.request("gpulens/status")  # the status machinery is loaded before measuring
        before = rss_bytes(server.proc.pid)
        server.write(b"Content-Length: 1000000000000\r\n\r\n" + hover("bad-huge"))
        server.write(frame(hover("after")))
        received = server.collect(lambda m: m.get("id") == "after")
        assert received[-1]["result"] is None
        skipped = [m for m in received if m.get("id") is None and "error" in m]
        assert skipped and skipped[0]["error"]["code"] == -32700
        assert "1,000,000,000,000 bytes" in skipped[0]["error"]["message"]
        time.sleep(0.2)
        assert rss_bytes(server.proc.pid) - before < 20 * 1024 * 1024
        assert server.proc.poll() is None
    finally:
        server.close()


# --- the decoder alone --------------------------------------------------------------------------


def decode(stream: bytes, cuts: list[int]) -> list[Body | FramingError]:
    decoder = FrameDecoder()
    events: list[Body | FramingError] = []
    previous = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        events.extend(decoder.feed(stream[previous:cut]))
        previous = max(previous, cut)
    return events


def bodies(events: list[Body | FramingError]) -> list[object]:
    return [e.value for e in events if isinstance(e, Body)]


@settings(max_examples=300, deadline=None)
@given(count=st.integers(1, 6), seed=st.integers(0, 2**32), data=st.data())
def test_valid_frames_decode_wherever_the_stream_is_cut(
    count: int, seed: int, data: st.DataObject
) -> None:
    rng = random.Random(seed)
    stream = b"".join(valid_frame(rng, f"ok-{n}") for n in range(count))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
    events = decode(stream, cuts)
    assert [e for e in events if isinstance(e, FramingError)] == []
    assert [b["id"] for b in bodies(events)] == [f"ok-{n}" for n in range(count)]


@settings(max_examples=300, deadline=None)
@given(count=st.integers(1, 8), seed=st.integers(0, 2**32), data=st.data())
def test_no_malformed_frame_hides_the_next_valid_one(
    count: int, seed: int, data: st.DataObject
) -> None:
    rng = random.Random(seed)
    stream = b"".join(malformed_frame(rng, n) + valid_frame(rng, f"ok-{n}") for n in range(count))
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))
    ids = [b.get("id") for b in bodies(decode(stream, cuts)) if isinstance(b, dict)]
    assert [i for i in ids if str(i).startswith("ok-")] == [f"ok-{n}" for n in range(count)]

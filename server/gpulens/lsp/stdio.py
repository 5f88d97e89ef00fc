"""The server's read loop: bytes in, messages to pygls, every bad frame answered and survived.

It replaces pygls' own loop (`pygls.io_.run_async`), which reads a body of whatever length a
header announces (`Content-Length: 1000000000000` ended the process with MemoryError) and,
after one malformed frame, took every later message for part of it: the server stayed alive
and never answered again. Here the framing is `wire.FrameDecoder`'s, a malformed message gets
the JSON-RPC error the spec gives it, and the loop ends only at the end of the stream or on
`exit`, with the exit code LSP asks for.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, BinaryIO

from pygls.exceptions import JsonRpcException

from gpulens.lsp.wire import (
    PARSE_ERROR,
    Body,
    FrameDecoder,
    FramingError,
    Rejection,
    parse_message,
)

if TYPE_CHECKING:
    from gpulens.lsp.protocol import GpulensProtocol

logger = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024


async def serve_stdio(protocol: GpulensProtocol, stdin: BinaryIO, stop: threading.Event) -> int:
    """Serve the messages read from ``stdin`` until it ends or `exit`; the exit code."""
    return await serve_stream(protocol, _chunks_of(stdin), stop)


async def serve_stream(
    protocol: GpulensProtocol,
    read_chunk: Callable[[], Awaitable[bytes]],
    stop: threading.Event,
) -> int:
    """Serve the messages of a byte stream (``read_chunk`` gives b"" at its end)."""
    decoder = FrameDecoder()
    while not stop.is_set():
        chunk = await read_chunk()
        if not chunk:
            if decoder.pending():
                logger.warning("the client's stream ended in the middle of a message")
            # a client that vanishes without `shutdown` is an abnormal end, as `exit` alone is
            return 0 if protocol.is_shut_down else 1
        try:
            for event in decoder.feed(chunk):
                code = _handle(protocol, event)
                if code is not None:
                    return code
        except BrokenPipeError:
            logger.error("the client closed its end of the connection; stopping")
            return 1
    return 0


def _handle(protocol: GpulensProtocol, event: Body | FramingError) -> int | None:
    """Answer or hand over one event of the stream; an exit code when it was `exit`."""
    if isinstance(event, FramingError):
        logger.warning("skipped input that is not a message: %s", event.reason)
        protocol.reply_error(None, PARSE_ERROR, event.reason)
        return None
    message = parse_message(event.value)
    if isinstance(message, Rejection):
        logger.warning("rejected a message: %s", message.message)
        for request_id in message.ids:
            protocol.reply_error(request_id, message.code, message.message)
        return None
    try:
        structured = protocol.structure_message(message)
    except JsonRpcException:
        return None  # answered and logged where it was found
    try:
        protocol.handle_message(structured)
    except SystemExit as done:  # pygls ends `exit` with sys.exit(0 or 1)
        return done.code if isinstance(done.code, int) else 1
    except BrokenPipeError:
        raise
    except Exception as error:
        logger.error("error handling %s: %s", message.get("method", "a response"), error)
        protocol.report_error(error)
    return None


def _chunks_of(stream: BinaryIO) -> Callable[[], Awaitable[bytes]]:
    """Chunks of ``stream`` as they arrive, read by a daemon thread.

    A daemon thread, not an executor: an executor's worker blocked on a read that never
    returns (a client that sends `exit` and keeps the pipe open) would hold the process at
    exit. It reads the file descriptor itself: a daemon thread blocked inside the buffered
    reader holds its lock, and the interpreter aborts at exit when it cannot take it. The
    small queue keeps the reader at most a few chunks ahead of the server.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)
    read: Callable[[int], bytes]
    try:
        descriptor = stream.fileno()
        read = functools.partial(os.read, descriptor)
    except (AttributeError, OSError, ValueError):  # an in-memory stream
        read = getattr(stream, "read1", stream.read)

    def pump() -> None:
        while True:
            try:
                chunk = read(CHUNK_BYTES)
            except (OSError, ValueError):  # closed under us: the same as its end
                chunk = b""
            try:
                asyncio.run_coroutine_threadsafe(queue.put(chunk), loop).result()
            except (RuntimeError, CancelledError, asyncio.CancelledError):
                # the loop is gone: the server is done
                return
            if not chunk:
                return

    threading.Thread(target=pump, name="gpulens-stdin", daemon=True).start()
    return queue.get

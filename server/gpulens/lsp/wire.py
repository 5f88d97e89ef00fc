"""Bytes to JSON-RPC messages, without I/O: LSP's base-protocol framing and the message envelope.

A frame is header lines (`Name: value`, ended by a blank line; `Content-Length` is required,
`Content-Type` and unknown headers are accepted, names in any case) and a body of exactly
Content-Length bytes of UTF-8 JSON. The decoder never gives up on a stream: after any error it
reports one `FramingError` and resynchronises at the next `Content-Length` header, so one bad
frame costs that frame and nothing after it. Memory stays bounded whatever arrives: a body
is buffered only as its bytes come, and never past `MAX_BODY_BYTES`.

How a frame that lies about its length is told apart from the next one: no valid JSON body
holds a raw header line (a raw line break is not allowed inside a JSON string, and
`content-length:` is not JSON outside one). So a body still incomplete when such a line
arrives was cut short (the client sent less than it announced, then the next message), and a
complete body that is not JSON is searched again from its first byte: what it swallowed of
the next frame's header is found there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Far above any real message (a 2 MB document is ~2.2 MB of JSON; the server stops analysing
# at 2 M characters) and far below what would hurt the machine: a frame announcing more is
# skipped without reading its body into memory.
MAX_BODY_BYTES = 256 * 1024 * 1024
# Real headers are two short lines; this bounds what is buffered while looking for their end.
MAX_HEADER_BYTES = 8 * 1024

# JSON-RPC 2.0 error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
# bounded, so that scanning each new chunk with an overlap of _OVERLAP bytes finds every one
_HEADER_LINE = re.compile(rb"content-length[ \t]{0,8}:[ \t]{0,8}[0-9]{1,20}[ \t]{0,8}\r?\n", re.I)
_OVERLAP = 80
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_LEADING_BLANKS = re.compile(rb"(?:\r?\n)+")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*")


@dataclass(frozen=True, slots=True)
class Body:
    """The JSON value of one well-framed message (not yet checked to be a message)."""

    value: Any


@dataclass(frozen=True, slots=True)
class FramingError:
    """Bytes that were not a frame, and were skipped; ``reason`` is one line."""

    reason: str


class FrameDecoder:
    """Feed it bytes as they arrive; it returns the bodies and framing errors they complete."""

    def __init__(self, max_body: int = MAX_BODY_BYTES, max_header: int = MAX_HEADER_BYTES) -> None:
        self._buffer = bytearray()
        self._max_body = max_body
        self._max_header = max_header
        self._body_length: int | None = None  # while reading a body
        self._scanned = 0  # how much of the body so far holds no header line
        self._resyncing = False

    def feed(self, data: bytes) -> list[Body | FramingError]:
        self._buffer += data
        events: list[Body | FramingError] = []
        while True:
            event = self._next()
            if event is None:
                return events
            events.append(event)

    def pending(self) -> bool:
        """Whether a message was begun and not finished (at the end of the stream)."""
        return bool(self._buffer.strip()) and not self._resyncing

    def _next(self) -> Body | FramingError | None:
        """The next event the buffer completes; None when more bytes are needed."""
        while True:
            if self._resyncing and not self._resync():
                return None
            if self._body_length is not None:
                return self._body()
            header = self._header()
            if header is False:
                return None
            if header is not True:
                return header

    def _resync(self) -> bool:
        """Drop bytes up to the next `Content-Length` header; whether one was found."""
        found = _HEADER_START.search(self._buffer)
        if found is None:
            # keep a tail that may be the beginning of a header split across two reads
            del self._buffer[: max(0, len(self._buffer) - len(b"content-length"))]
            return False
        del self._buffer[: found.start()]
        self._resyncing = False
        return True

    def _fail(self, reason: str, skip: int = 1) -> FramingError:
        """Skip ``skip`` bytes and resynchronise. Progress is certain: either a byte is skipped
        or a header block was consumed before."""
        del self._buffer[:skip]
        self._resyncing = True
        return FramingError(reason)

    def _header(self) -> FramingError | bool:
        """Read one header block: True when read, False when more bytes are needed."""
        blanks = _LEADING_BLANKS.match(self._buffer)
        if blanks is not None:  # a line break between frames is harmless
            del self._buffer[: blanks.end()]
        if not self._buffer:
            return False
        end = _BLANK_LINE.search(self._buffer, 0, self._max_header + 4)
        if end is None:
            if len(self._buffer) > self._max_header:
                return self._fail(f"no end of headers in the first {self._max_header} bytes")
            return False
        length: int | None = None
        for line in re.split(rb"\r?\n", bytes(self._buffer[: end.start()])):
            field = _FIELD.fullmatch(line)
            if field is None:
                return self._fail(f"not a header line: {_show(line)}")
            name, value = field.group(1).lower(), field.group(2)
            if name == b"content-length":
                if not value.isdigit() or len(value) > 20:
                    return self._fail(f"Content-Length is not a number: {_show(value)}")
                length = int(value)
        if length is None:
            return self._fail("a message without a Content-Length header")
        del self._buffer[: end.end()]
        if length > self._max_body:
            # the body is not read: whatever follows is scanned for the next header
            return self._fail(
                f"a message of {length:,} bytes, over the limit of {self._max_body:,}", skip=0
            )
        self._body_length = length
        self._scanned = 0
        return True

    def _body(self) -> Body | FramingError | None:
        length = self._body_length
        assert length is not None
        # only what arrived since the last look is scanned: a large body costs one pass
        cut = _HEADER_LINE.search(self._buffer, max(0, self._scanned - _OVERLAP), length)
        if cut is not None:
            self._body_length = None
            del self._buffer[: cut.start()]
            return FramingError(f"a message cut short: a new one began before its {length:,} bytes")
        if len(self._buffer) < length:
            self._scanned = len(self._buffer)
            return None
        self._body_length = None
        try:
            value = json.loads(bytes(self._buffer[:length]).decode("utf-8"))  # LSP's only encoding
        except UnicodeDecodeError as error:
            return self._fail(f"a message that is not UTF-8: {first_line(error)}", skip=0)
        except (ValueError, RecursionError) as error:
            return self._fail(f"a message that is not JSON: {first_line(error)}", skip=0)
        del self._buffer[:length]
        return Body(value)


def _show(data: bytes, limit: int = 40) -> str:
    text = repr(bytes(data[:limit]))[2:-1]
    return text + ("…" if len(data) > limit else "")


# --- the JSON-RPC envelope ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejection:
    """A body that is not a message the server can handle, and the error to answer it with."""

    code: int
    message: str
    ids: tuple[int | str | None, ...] = (None,)  # whom to answer: the requests' ids, or null


def parse_message(value: Any) -> dict[str, Any] | Rejection:
    """The JSON-RPC message ``value`` is, or why it is not one (what JSON-RPC 2.0 answers)."""
    if isinstance(value, list):
        # JSON-RPC batches are not part of LSP: answer each request so no client waits
        ids = tuple(
            item["id"]
            for item in value
            if isinstance(item, dict) and "method" in item and _valid_id(item.get("id"))
        )
        return Rejection(INVALID_REQUEST, "batches are not supported by LSP", ids or (None,))
    if not isinstance(value, dict):
        return Rejection(INVALID_REQUEST, f"a message must be a JSON object, not {_kind(value)}")
    request_id = value.get("id")
    answer_to = (request_id,) if "method" in value and _valid_id(request_id) else (None,)
    if value.get("jsonrpc") != "2.0":
        return Rejection(INVALID_REQUEST, 'a message must have "jsonrpc": "2.0"', answer_to)
    if "method" in value:
        if not isinstance(value["method"], str):
            return Rejection(INVALID_REQUEST, "a message's method must be a string")
        if "id" in value and not _valid_id(request_id):
            return Rejection(INVALID_REQUEST, "a request's id must be a string or an integer")
        return value
    if "id" in value and ("result" in value or "error" in value):
        return value  # a response to one of the server's requests
    return Rejection(INVALID_REQUEST, "neither a request, a notification nor a response")


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _kind(value: object) -> str:
    return {str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__

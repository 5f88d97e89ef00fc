"""Python source files as bytes -> text, the way Python reads them (PEP 263).

`gpulens check` and `gpulens profile` read files through this one function, so a file one of
them reads the other reads too: UTF-8 by default, a BOM or a `# -*- coding: NAME -*-` line
for anything else.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass


class SourceDecodeError(ValueError):
    """The bytes are not text in the encoding the file declares; the message says what to do."""


@dataclass(frozen=True, slots=True)
class DecodedSource:
    text: str
    encoding: str  # the codec that reads it back: "utf-8", "utf-8-sig" (a BOM), "latin-1", …


def decode_source(data: bytes, name: str) -> DecodedSource:
    """The text of a Python file's bytes; ``name`` (the path as shown) starts the error."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if not error.msg.startswith("invalid or missing encoding declaration"):
            raise SourceDecodeError(
                f"{name}: {error.msg}; fix the `coding:` comment or save the file as UTF-8"
            ) from None
        encoding = "utf-8"  # no declaration and not UTF-8: the decoding below says where
    try:
        return DecodedSource(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SourceDecodeError(
            f"{name}: not valid {encoding.upper()} (byte 0x{data[error.start]:02x} on line "
            f"{line}); save the file as UTF-8 or declare its encoding with a "
            "`# -*- coding: NAME -*-` comment on its first line"
        ) from None

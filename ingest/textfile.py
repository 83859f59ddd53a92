"""Decoding of text files: UTF-8 (with or without BOM), UTF-16/32 with BOM, else cp1252 or latin-1.

:func:`stream_text` decodes a file of any size piece by piece (the encoding is settled by a first pass over its
bytes, so a non-UTF-8 byte near the end is seen before any text is handed on); :func:`decode_text` is the same on
bytes in memory.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Iterator

from ingest.document import IngestError

_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]
# Bytes that never occur in text: C0 controls other than tab, newlines, form feed and escape.
_BINARY_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\x0c\x1b")
_SAMPLE_BYTES = 65536


def decode_text(data: bytes, source: str) -> tuple[str, list[str]]:
    """The text of ``data`` and any warning; IngestError for binary content."""
    pieces, warnings = stream_text(lambda: iter([data]), source)
    return "".join(pieces), warnings


def stream_text(chunks: Callable[[], Iterable[bytes]], source: str) -> tuple[Iterator[str], list[str]]:
    """The text of the bytes that each call of ``chunks`` yields, as an iterator of decoded pieces, and any warning;
    IngestError for binary content (or, while iterating, for invalid text under a byte-order mark)."""
    head = b""
    for chunk in chunks():
        head += chunk
        if len(head) >= _SAMPLE_BYTES:
            break
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return _decoded(chunks, encoding, source), []
    sample = head[:_SAMPLE_BYTES]
    if b"\x00" in sample or len(sample.translate(None, _BINARY_BYTES)) < 0.95 * len(sample):
        raise IngestError(source, "binary content, not text")
    if _decodes(chunks, "utf-8"):
        return _decoded(chunks, "utf-8", source), []
    if _decodes(chunks, "cp1252"):
        return _decoded(chunks, "cp1252", source), ["not UTF-8; decoded as cp1252"]
    return _decoded(chunks, "latin-1", source), ["not UTF-8; decoded as latin-1"]


def _decodes(chunks: Callable[[], Iterable[bytes]], encoding: str) -> bool:
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        for chunk in chunks():
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _decoded(chunks: Callable[[], Iterable[bytes]], encoding: str, source: str) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        for chunk in chunks():
            if piece := decoder.decode(chunk):
                yield piece
        if tail := decoder.decode(b"", final=True):
            yield tail
    except UnicodeDecodeError as error:
        raise IngestError(source, f"invalid {encoding.upper()} text: {error.reason}") from error

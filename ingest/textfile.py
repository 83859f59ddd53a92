"""Decoding of text files: UTF-8 (with or without BOM), UTF-16/32 with BOM, else cp1252 or latin-1."""

from __future__ import annotations

import codecs

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


def decode_text(data: bytes, source: str) -> tuple[str, list[str]]:
    """The text of ``data`` and any warning; IngestError for binary content."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding), []
            except UnicodeDecodeError as error:
                raise IngestError(source, f"invalid {encoding.upper()} text: {error.reason}") from error
    sample = data[:65536]
    if b"\x00" in sample or len(sample.translate(None, _BINARY_BYTES)) < 0.95 * len(sample):
        raise IngestError(source, "binary content, not text")
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), ["not UTF-8; decoded as cp1252"]
    except UnicodeDecodeError:
        return data.decode("latin-1"), ["not UTF-8; decoded as latin-1"]

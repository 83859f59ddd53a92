"""The shapes ingestion hands to the library store.

Every span (pages, sections, sentences) is a half-open character range ``[start, end)`` into
``ParsedDocument.text``, the cleaned text extracted from the source. A citation is therefore always
``text[start:end]`` of its document, which is what the library stores and what the UI quotes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class IngestError(Exception):
    """A file that cannot be ingested; ``str()`` is a one-line message naming the file and the reason."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # picklable across worker processes
        return (IngestError, (self.source, self.reason))


@dataclass
class Page:
    number: int  # 1-based page number in the source PDF
    start: int
    end: int
    needs_ocr: bool = False  # the page has no extractable text (scanned image)


@dataclass
class Section:
    title: str
    kind: str  # "abstract", "references" or "body"
    start: int
    end: int


@dataclass
class Sentence:
    start: int
    end: int
    page: int | None  # 1-based page number, None for sources without pages
    section: int | None  # index into ParsedDocument.sections
    paragraph: int  # running paragraph index within the document


@dataclass
class ParsedDocument:
    source: str  # file path, "archive.zip!member/path" or "file.jsonl#id"
    title: str
    kind: str  # "pdf", "txt", "md", "html", "jsonl", "xml", "pydoc"
    content_hash: str  # sha256 hex of the raw bytes (of the line for JSONL records)
    text: str
    pages: list[Page] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def needs_ocr_pages(self) -> list[int]:
        return [p.number for p in self.pages if p.needs_ocr]

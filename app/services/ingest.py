"""Ingestion into a collection: files, folders, zip archives, uploads and in-memory texts, one event per input.

Each input is parsed in the isolated workers of ``ingest.pipeline`` (time and memory caps), counted in model
tokens, stored (``Library.store``: one transaction per document) and scheduled for indexing
(``app.services.indexes``).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.services.errors import UserError, storage_errors
from app.services.indexes import IndexService
from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_items_isolated
from ingest.sources import InputItem, Limits, expand_inputs, item_hash
from model.tokenizer import load_tokenizer
from storage.library import Library

MAX_FILE_BYTES = Limits().max_file_bytes  # the largest file ingested (the CLI's --max-file-mb default)


@dataclass
class IngestEvent:
    """What happened to one input (a file, an archive member or a JSONL record)."""

    index: int  # 1-based position among the inputs of this batch
    total: int
    source: str
    status: str  # "ingested", "replaced", "unchanged", "duplicate" or "error"
    message: str
    document_id: int | None = None
    pages: int = 0
    tokens: int = 0
    sentences: int = 0
    needs_ocr_pages: list[int] | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def sizes(self) -> str:
        """What an ingested input holds, for a log line: "12 pages, 4,310 tokens, 180 sentences, 0.8 s" (a text
        file has no pages: none are named)."""
        pages = f"{self.pages} pages, " if self.pages else ""
        return f"{pages}{self.tokens:,} tokens, {self.sentences:,} sentences, {self.seconds:.1f} s"


@dataclass
class IngestSummary:
    files: int
    ingested: int
    unchanged: int
    errors: int
    pages: int
    tokens: int
    seconds: float

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    def sizes(self) -> str:
        """What the batch ingested, for a log line: "12 pages, 4,310 tokens in 2.1 s (5.7 pages/s, 2,052 tokens/s)"
        (the pages only when some input had pages)."""
        if not self.pages:
            return f"{self.tokens:,} tokens in {self.seconds:.1f} s ({self.tokens_per_s:,.0f} tokens/s)"
        return (
            f"{self.pages} pages, {self.tokens:,} tokens in {self.seconds:.1f} s "
            f"({self.pages_per_s:.1f} pages/s, {self.tokens_per_s:,.0f} tokens/s)"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"pages_per_s": round(self.pages_per_s, 2), "tokens_per_s": round(self.tokens_per_s)}

    @classmethod
    def of(cls, events: list[IngestEvent], seconds: float) -> IngestSummary:
        fresh = [e for e in events if e.status in ("ingested", "replaced")]
        return cls(
            files=len(events),
            ingested=len(fresh),
            unchanged=sum(e.status in ("unchanged", "duplicate") for e in events),
            errors=sum(e.status == "error" for e in events),
            pages=sum(e.pages for e in fresh),
            tokens=sum(e.tokens for e in fresh),
            seconds=seconds,
        )


class IngestService:
    def __init__(self, library: Library, indexes: IndexService) -> None:
        self.library, self.indexes = library, indexes

    def ingest(
        self,
        paths: Iterable[Path],
        collection: str,
        password: str | None = None,
        limits: Limits | None = None,
        workers: int = 2,
        user: str = "",
    ) -> Iterator[IngestEvent]:
        """Ingest files, folders and zip archives into ``user``'s ``collection`` (created when new), yielding one
        event per input."""
        if not collection.strip():
            raise UserError("--collection needs a non-empty name")
        limits = limits or Limits()
        with storage_errors():
            self.library.ensure_collection(collection, user)
        inputs = list(expand_inputs(paths, limits))  # small: archive members are read by the workers
        total = len(inputs)
        index = 0
        to_parse: list[InputItem] = []
        for entry in inputs:
            if isinstance(entry, IngestError):
                index += 1
                yield self._store(collection, entry, index, total, 0.0, user)
            elif self.library.is_unchanged(collection, entry.source, item_hash(entry), user):
                index += 1
                yield IngestEvent(index, total, entry.source, "unchanged", "unchanged since the last ingest")
            else:
                to_parse.append(entry)
        numbers: dict[int, int] = {}  # id(item) -> its index, given when its first results arrive
        produced: set[int] = set()
        for item, results, seconds, done in parse_items_isolated(to_parse, password, limits, workers):
            number = numbers.setdefault(id(item), index + len(numbers) + 1)
            if results:
                produced.add(id(item))
            elif done and id(item) not in produced:
                results = [IngestError(item.source, "no text found")]
            for result in results:
                yield self._store(collection, result, number, total, seconds / len(results), user)

    def uploads_dir(self, collection: str, user: str = "") -> Path:
        """Where ``user``'s uploaded files of ``collection`` are kept under the names they gave them."""
        folders = [re.sub(r"[^\w.-]+", "_", name).strip("._") or "_" for name in (user or "_", collection)]
        return self.library.home / "uploads" / folders[0] / folders[1]

    def ingest_uploads(
        self,
        files: Iterable[Path],
        collection: str,
        password: str | None = None,
        limits: Limits | None = None,
        user: str = "",
    ) -> Iterator[IngestEvent]:
        """Ingest uploaded temporary files: each is moved into ``uploads_dir`` under its own name (so a changed file
        uploaded again replaces its earlier version instead of adding a second document, and the web server keeps
        no copy to serve)."""
        target = self.uploads_dir(collection, user)
        target.mkdir(parents=True, exist_ok=True)
        staged: list[Path] = []
        for file in files:
            if not Path(file).is_file():
                raise UserError(f"the upload {Path(file).name} is gone from the server: upload it again")
            destination = target / Path(file).name
            if destination in staged:  # two uploads with the same name in one batch
                destination = target / f"{destination.stem}-{len(staged)}{destination.suffix}"
            shutil.copyfile(file, destination)
            Path(file).unlink(missing_ok=True)
            staged.append(destination)
        yield from self.ingest(staged, collection, password, limits, user=user)

    def ingest_texts(
        self, documents: Iterable[ParsedDocument], collection: str, user: str = ""
    ) -> Iterator[IngestEvent]:
        """Store documents already parsed in memory (e.g. the embedded standard-library sample)."""
        documents = list(documents)
        for index, parsed in enumerate(documents, start=1):
            yield self._store(collection, parsed, index, len(documents), 0.0, user)

    def _store(
        self, collection: str, result: ParsedDocument | IngestError, index: int, total: int, seconds: float, user: str
    ) -> IngestEvent:
        with storage_errors():
            return self._store_one(collection, result, index, total, seconds, user)

    def _store_one(
        self, collection: str, result: ParsedDocument | IngestError, index: int, total: int, seconds: float, user: str
    ) -> IngestEvent:
        if isinstance(result, IngestError):
            stored = self.library.record_error(collection, result.source, result.reason, user=user)
            return IngestEvent(
                index, total, result.source, "error", stored.message, stored.document_id, seconds=seconds
            )
        tokens = load_tokenizer().count(result.text)
        stored = self.library.store(collection, result, tokens, user)
        if stored.status in ("ingested", "replaced") and stored.document_id is not None:
            self.indexes.schedule([stored.document_id])  # indexed in the background while the batch goes on
        message = stored.message or "; ".join(result.warnings)
        return IngestEvent(
            index,
            total,
            result.source,
            stored.status,
            message,
            stored.document_id,
            pages=len(result.pages),
            tokens=tokens,
            sentences=len(result.sentences),
            needs_ocr_pages=result.needs_ocr_pages,
            seconds=seconds,
        )

"""Services shared by the CLI and the Gradio app: ingest files, list and remove documents, ask questions.

Neither front end touches the database or the ingestion pipeline directly; both call ``Services``.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_items_isolated
from ingest.sources import InputItem, Limits, expand_inputs
from model.reader import READERS, Answer
from storage.db import StorageError
from storage.library import CollectionInfo, Library
from storage.models import AnswerRow, CitationRow, Document, MetricRecord
from storage.sessions import SessionInfo, SessionStore


class UserError(Exception):
    """A request that cannot be served as asked; the message is one line for the user."""


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {
            "pages_per_s": round(self.pages_per_s, 2),
            "tokens_per_s": round(self.tokens_per_s),
        }


def file_hash(item: InputItem) -> str:
    digest = hashlib.sha256()
    if item.data is not None:
        digest.update(item.data)
    elif item.path is not None:
        with open(item.path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class Services:
    def __init__(self, home: Path | None = None) -> None:
        try:
            self.library = Library(home)
        except StorageError as error:
            raise UserError(str(error)) from error
        self.sessions = SessionStore(self.library)

    # ----------------------------------------------------------------- library

    def collections(self) -> list[CollectionInfo]:
        return self.library.collections()

    def documents(self, collection: str) -> list[Document]:
        try:
            return self.library.documents(collection)
        except StorageError as error:
            raise UserError(str(error)) from error

    def remove(self, collection: str, refs: list[str]) -> list[Document]:
        """Remove documents of ``collection`` named by id, source or title."""
        documents = self.documents(collection)
        chosen: list[Document] = []
        for ref in refs:
            matches = [d for d in documents if ref in (str(d.id), d.source, d.title, Path(d.source).name)]
            if not matches:
                raise UserError(f"no document '{ref}' in collection '{collection}'")
            if len(matches) > 1:
                ids = ", ".join(str(d.id) for d in matches)
                raise UserError(f"'{ref}' names several documents in '{collection}' (ids {ids}); use an id")
            chosen.append(matches[0])
        removed = [self.library.remove_document(d.id) for d in chosen]
        uploads = self.library.home / "uploads"
        for document in removed:  # an uploaded copy goes with its document
            if Path(document.source).parent.parent == uploads:
                Path(document.source).unlink(missing_ok=True)
        return removed

    def remove_collection(self, collection: str) -> int:
        try:
            return self.library.remove_collection(collection)
        except StorageError as error:
            raise UserError(str(error)) from error

    # ----------------------------------------------------------------- ingestion

    def ingest(
        self,
        paths: Iterable[Path],
        collection: str,
        password: str | None = None,
        limits: Limits | None = None,
        workers: int = 2,
    ) -> Iterator[IngestEvent]:
        """Ingest files, folders and zip archives into ``collection``, yielding one event per input."""
        if not collection.strip():
            raise UserError("--collection needs a non-empty name")
        limits = limits or Limits()
        self.library.ensure_collection(collection)
        inputs = list(expand_inputs([Path(p).expanduser().resolve() for p in paths], limits))
        total = len(inputs)
        index = 0
        to_parse: list[InputItem] = []
        for entry in inputs:
            if isinstance(entry, IngestError):
                index += 1
                result = self.library.record_error(collection, entry.source, entry.reason)
                yield IngestEvent(index, total, entry.source, "error", result.message, result.document_id)
            elif self.library.is_unchanged(collection, entry.source, file_hash(entry)):
                index += 1
                yield IngestEvent(index, total, entry.source, "unchanged", "unchanged since the last ingest")
            else:
                to_parse.append(entry)
        for item, results, seconds in parse_items_isolated(to_parse, password, limits, workers):
            index += 1
            if not results:
                results = [IngestError(item.source, "no text found")]
            for result in results:
                yield self._store(collection, result, index, total, seconds / len(results))

    def uploads_dir(self, collection: str) -> Path:
        """Where uploaded files of ``collection`` are kept under the names their users gave them."""
        safe = re.sub(r"[^\w.-]+", "_", collection).strip("._") or "collection"
        return self.library.home / "uploads" / safe

    def ingest_uploads(
        self, files: Iterable[Path], collection: str, password: str | None = None, limits: Limits | None = None
    ) -> Iterator[IngestEvent]:
        """Ingest uploaded temporary files: each is first copied into ``uploads_dir`` under its own name, so a
        changed file uploaded again replaces its earlier version instead of adding a second document."""
        target = self.uploads_dir(collection)
        target.mkdir(parents=True, exist_ok=True)
        staged: list[Path] = []
        for file in files:
            destination = target / Path(file).name
            if destination in staged:  # two uploads with the same name in one batch
                destination = target / f"{destination.stem}-{len(staged)}{destination.suffix}"
            shutil.copyfile(file, destination)
            staged.append(destination)
        yield from self.ingest(staged, collection, password, limits)

    def ingest_texts(self, documents: Iterable[ParsedDocument], collection: str) -> Iterator[IngestEvent]:
        """Store documents already parsed in memory (e.g. the embedded standard-library sample)."""
        documents = list(documents)
        for index, parsed in enumerate(documents, start=1):
            yield self._store(collection, parsed, index, len(documents), 0.0)

    def _store(
        self, collection: str, result: ParsedDocument | IngestError, index: int, total: int, seconds: float
    ) -> IngestEvent:
        if isinstance(result, IngestError):
            stored = self.library.record_error(collection, result.source, result.reason)
            return IngestEvent(
                index, total, result.source, "error", stored.message, stored.document_id, seconds=seconds
            )
        stored = self.library.store(collection, result)
        message = stored.message or "; ".join(result.warnings)
        return IngestEvent(
            index,
            total,
            result.source,
            stored.status,
            message,
            stored.document_id,
            pages=len(result.pages),
            tokens=int(len(result.token_ids)),
            sentences=len(result.sentences),
            needs_ocr_pages=result.needs_ocr_pages,
            seconds=seconds,
        )

    @staticmethod
    def summarize_events(events: list[IngestEvent], seconds: float) -> IngestSummary:
        fresh = [e for e in events if e.status in ("ingested", "replaced")]
        return IngestSummary(
            files=len(events),
            ingested=len(fresh),
            unchanged=sum(e.status in ("unchanged", "duplicate") for e in events),
            errors=sum(e.status == "error" for e in events),
            pages=sum(e.pages for e in fresh),
            tokens=sum(e.tokens for e in fresh),
            seconds=seconds,
        )

    # ----------------------------------------------------------------- questions

    def ask(
        self,
        collections: list[str],
        question: str,
        top_k: int = 5,
        reader: str = "bm25",
        session_id: int | None = None,
        user: str = "",
    ) -> Answer:
        """Answer ``question`` over ``collections``; the answer (in ``session_id`` when given, a session of
        ``user``) and a metric record are stored."""
        if not question.strip():
            raise UserError("the question is empty")
        if not collections:
            raise UserError("choose at least one collection to ask over")
        if top_k < 1 or top_k > 100:
            raise UserError(f"top-k must be between 1 and 100, got {top_k}")
        if reader not in READERS:
            raise UserError(f"unknown reader '{reader}' (readers: {', '.join(READERS)})")
        if session_id is not None:
            self._sessions_call("check", session_id, user)
        started = time.perf_counter()
        try:
            answer = READERS[reader]().answer(self.library, collections, question, top_k)
        except StorageError as error:
            raise UserError(str(error)) from error
        answer.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 2)
        self._record_answer(collections, question, answer, top_k, session_id)
        if session_id is not None:
            self.sessions.touch(session_id)
        return answer

    # ----------------------------------------------------------------- chat sessions

    def _sessions_call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.sessions, method)(*args)
        except StorageError as error:
            raise UserError(str(error)) from error

    def create_session(self, name: str, user: str = "") -> SessionInfo:
        return self._sessions_call("create", name, user)

    def list_sessions(self, user: str = "") -> list[SessionInfo]:
        return self.sessions.list(user)

    def rename_session(self, session_id: int, name: str, user: str = "") -> SessionInfo:
        return self._sessions_call("rename", session_id, name, user)

    def delete_session(self, session_id: int, user: str = "") -> None:
        self._sessions_call("delete", session_id, user)

    def session_history(self, session_id: int, user: str = "") -> list[dict[str, Any]]:
        return self._sessions_call("history", session_id, user)

    def export_session(self, session_id: int, fmt: str, user: str = "") -> str:
        return self._sessions_call("export", session_id, fmt, user)

    def _record_answer(
        self, collections: list[str], question: str, answer: Answer, top_k: int, session_id: int | None
    ) -> None:
        with self.library.session() as session, session.begin():
            row = AnswerRow(
                session_id=session_id,
                question=question,
                collections=collections,
                answer=answer.answer,
                reader=answer.reader,
                settings={"top_k": top_k},
                timings_ms=answer.timings_ms,
            )
            row.citations = [
                CitationRow(
                    rank=i,
                    document_id=c.doc,
                    source=c.source,
                    title=c.title,
                    page=c.page,
                    start=c.start,
                    end=c.end,
                    text=c.text,
                    score=c.score,
                )
                for i, c in enumerate(answer.citations)
            ]
            session.add(row)
            session.add(
                MetricRecord(
                    kind="ask",
                    session_id=session_id,
                    collection=",".join(collections),
                    total_ms=answer.timings_ms["total"],
                    data={"timings_ms": answer.timings_ms, "reader": answer.reader},
                )
            )

"""The library: a data directory holding ``library.db`` (SQLite, WAL) and ``arrays/`` (token arrays, caches).

Writes are all-or-nothing per document: the array file is written atomically under a fresh name, then one
transaction inserts the document with its pages, sections and sentences (and deletes the version it replaces);
only after the commit is the replaced array file removed. A crash at any point leaves either the old or the new
version, plus at worst an unreferenced array file, which ``Library.repair`` (run at every open) deletes.
"""

from __future__ import annotations

import fcntl
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import platformdirs
from sqlalchemy import delete, func, insert, select, text
from sqlalchemy.orm import Session

from ingest.document import ParsedDocument
from storage.arrays import read_npz, write_npz_atomic
from storage.db import StorageError, open_database
from storage.models import Collection, Document, PageRow, SectionRow, SentenceRow

HOME_ENV = "INDEXPOOL_HOME"


def default_home() -> Path:
    """``$INDEXPOOL_HOME`` if set, else the user's data directory (e.g. ``~/.local/share/indexpool``)."""
    configured = os.environ.get(HOME_ENV)
    return Path(configured).expanduser() if configured else Path(platformdirs.user_data_dir("indexpool"))


@dataclass(frozen=True)
class StoreResult:
    status: str  # "ingested", "replaced", "unchanged", "duplicate" or "error"
    document_id: int | None
    message: str = ""


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    documents: int
    errors: int
    pages: int
    tokens: int
    sentences: int


@dataclass(frozen=True)
class SentenceHit:
    sentence_id: int
    document_id: int
    source: str
    title: str
    page: int | None
    start: int
    end: int
    text: str
    score: float


_FTS_WORD = re.compile(r"\w+", re.UNICODE)


class Library:
    def __init__(self, home: Path | None = None) -> None:
        self.home = Path(home) if home is not None else default_home()
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            self.arrays_dir.mkdir(exist_ok=True)
        except OSError as error:
            raise StorageError(f"cannot create the library folder {self.home}: {error.strerror}") from error
        self._sessions = open_database(self.db_path)
        self.repair()

    @property
    def db_path(self) -> Path:
        return self.home / "library.db"

    @property
    def arrays_dir(self) -> Path:
        return self.home / "arrays"

    def session(self) -> Session:
        return self._sessions()

    # ----------------------------------------------------------------- collections and documents

    def collection_names(self) -> list[str]:
        with self.session() as session:
            return list(session.scalars(select(Collection.name).order_by(Collection.name)))

    def collections(self) -> list[CollectionInfo]:
        ingested = Document.status == "ingested"
        query = (
            select(
                Collection.name,
                func.count(Document.id).filter(ingested),
                func.count(Document.id).filter(Document.status == "error"),
                func.coalesce(func.sum(Document.pages).filter(ingested), 0),
                func.coalesce(func.sum(Document.tokens).filter(ingested), 0),
                func.coalesce(func.sum(Document.sentence_count).filter(ingested), 0),
            )
            .outerjoin(Document)
            .group_by(Collection.id)
            .order_by(Collection.name)
        )
        with self.session() as session:
            return [CollectionInfo(*row) for row in session.execute(query)]

    def documents(self, collection: str) -> list[Document]:
        with self.session() as session:
            collection_id = self._collection_id(session, collection)
            query = select(Document).where(Document.collection_id == collection_id).order_by(Document.source)
            return list(session.scalars(query))

    def document(self, document_id: int, with_text: bool = False) -> Document | None:
        with self.session() as session:
            document = session.get(Document, document_id)
            if document is not None and with_text:
                _ = document.text  # load the deferred column before the session closes
            return document

    def document_tokens(self, document_id: int) -> dict[str, np.ndarray]:
        """The document's token ``ids``, ``starts`` and ``ends`` (character spans in its text)."""
        document = self.document(document_id)
        if document is None or document.array_file is None:
            raise StorageError(f"document {document_id} has no token arrays")
        return read_npz(self.arrays_dir / document.array_file)

    def _collection_id(self, session: Session, name: str) -> int:
        collection_id = session.scalar(select(Collection.id).where(Collection.name == name))
        if collection_id is None:
            known = ", ".join(self.collection_names()) or "none yet"
            raise StorageError(f"no collection named '{name}' (collections: {known})")
        return collection_id

    def _get_or_create_collection(self, session: Session, name: str) -> int:
        collection_id = session.scalar(select(Collection.id).where(Collection.name == name))
        if collection_id is None:
            collection = Collection(name=name)
            session.add(collection)
            session.flush()
            collection_id = collection.id
        return collection_id

    def ensure_collection(self, name: str) -> None:
        if not name.strip():
            raise StorageError("a collection needs a non-empty name")
        with self.session() as session, session.begin():
            self._get_or_create_collection(session, name)

    def is_unchanged(self, collection: str, source: str, content_hash: str) -> bool:
        """True when ``source`` is already ingested in ``collection`` with this exact content."""
        with self.session() as session:
            query = (
                select(Document.id)
                .join(Collection)
                .where(Collection.name == collection, Document.source == source)
                .where(Document.content_hash == content_hash, Document.status == "ingested")
            )
            return session.scalar(query) is not None

    # ----------------------------------------------------------------- writing

    def store(self, collection: str, parsed: ParsedDocument) -> StoreResult:
        """Store one parsed document: a no-op if unchanged, a replacement if its source changed."""
        with self.session() as session:
            collection_id = self._get_or_create_collection(session, collection)
            session.commit()
            previous = session.scalar(
                select(Document).where(Document.collection_id == collection_id, Document.source == parsed.source)
            )
            if previous is not None and previous.status == "ingested":
                if previous.content_hash == parsed.content_hash:
                    return StoreResult("unchanged", previous.id, "unchanged since the last ingest")
            twin = session.scalar(
                select(Document).where(
                    Document.collection_id == collection_id,
                    Document.content_hash == parsed.content_hash,
                    Document.status == "ingested",
                    Document.source != parsed.source,
                )
            )
            if twin is not None:
                return StoreResult("duplicate", twin.id, f"same content as {twin.source}, skipped")

        array_file = f"{uuid.uuid4().hex}.npz"
        old_array_file: str | None = None
        with self._writing():
            write_npz_atomic(
                self.arrays_dir / array_file,
                ids=parsed.token_ids.astype(np.int32),
                starts=parsed.token_starts.astype(np.int32),
                ends=parsed.token_ends.astype(np.int32),
            )
            document_id, previous, old_array_file = self._commit_document(collection_id, parsed, array_file)
        if old_array_file:
            (self.arrays_dir / old_array_file).unlink(missing_ok=True)
        replaced = previous is not None and previous.status == "ingested"
        return StoreResult("replaced" if replaced else "ingested", document_id)

    def _commit_document(
        self, collection_id: int, parsed: ParsedDocument, array_file: str
    ) -> tuple[int, Document | None, str | None]:
        """Insert the document in one transaction, deleting the version it replaces; on failure its new array
        file goes too. Returns (document id, replaced document, the replaced array file)."""
        old_array_file: str | None = None
        try:
            with self.session() as session, session.begin():
                previous = session.scalar(
                    select(Document).where(Document.collection_id == collection_id, Document.source == parsed.source)
                )
                if previous is not None:
                    old_array_file = previous.array_file
                    self._delete_document_rows(session, previous.id)
                document_id = self._insert_document(session, collection_id, parsed, array_file)
        except BaseException:
            (self.arrays_dir / array_file).unlink(missing_ok=True)
            raise
        return document_id, previous, old_array_file

    def _insert_document(self, session: Session, collection_id: int, parsed: ParsedDocument, array_file: str) -> int:
        document = Document(
            collection_id=collection_id,
            source=parsed.source,
            title=parsed.title,
            kind=parsed.kind,
            content_hash=parsed.content_hash,
            status="ingested",
            warnings=list(parsed.warnings),
            pages=len(parsed.pages),
            needs_ocr_pages=parsed.needs_ocr_pages,
            tokens=int(len(parsed.token_ids)),
            chars=len(parsed.text),
            sentence_count=len(parsed.sentences),
            array_file=array_file,
            text=parsed.text,
        )
        session.add(document)
        session.flush()
        if parsed.pages:
            session.execute(
                insert(PageRow),
                [
                    {
                        "document_id": document.id,
                        "number": p.number,
                        "start": p.start,
                        "end": p.end,
                        "needs_ocr": p.needs_ocr,
                    }
                    for p in parsed.pages
                ],
            )
        if parsed.sections:
            session.execute(
                insert(SectionRow),
                [
                    {
                        "document_id": document.id,
                        "idx": i,
                        "title": s.title,
                        "kind": s.kind,
                        "start": s.start,
                        "end": s.end,
                    }
                    for i, s in enumerate(parsed.sections)
                ],
            )
        if parsed.sentences:
            session.execute(
                insert(SentenceRow),
                [
                    {
                        "document_id": document.id,
                        "idx": i,
                        "page": s.page,
                        "section_idx": s.section,
                        "paragraph": s.paragraph,
                        "start": s.start,
                        "end": s.end,
                        "token_start": s.token_start,
                        "token_end": s.token_end,
                        "text": parsed.text[s.start : s.end],
                    }
                    for i, s in enumerate(parsed.sentences)
                ],
            )
        return document.id

    def record_error(self, collection: str, source: str, message: str, content_hash: str = "") -> StoreResult:
        """Remember that ``source`` failed; an earlier good version of it is kept untouched."""
        with self.session() as session, session.begin():
            collection_id = self._get_or_create_collection(session, collection)
            previous = session.scalar(
                select(Document).where(Document.collection_id == collection_id, Document.source == source)
            )
            if previous is not None and previous.status == "ingested":
                return StoreResult("error", previous.id, f"{message} (the version ingested earlier is kept)")
            if previous is None:
                previous = Document(collection_id=collection_id, source=source, title=Path(source).name)
                session.add(previous)
            previous.status = "error"
            previous.error = message
            previous.content_hash = content_hash
            session.flush()
            return StoreResult("error", previous.id, message)

    def remove_document(self, document_id: int) -> Document:
        with self.session() as session, session.begin():
            document = session.get(Document, document_id)
            if document is None:
                raise StorageError(f"no document with id {document_id}")
            self._delete_document_rows(session, document_id)
        if document.array_file:
            (self.arrays_dir / document.array_file).unlink(missing_ok=True)
        return document

    def remove_collection(self, name: str) -> int:
        """Remove a collection with all its documents; returns how many documents went."""
        with self.session() as session, session.begin():
            collection_id = self._collection_id(session, name)
            documents = list(session.scalars(select(Document).where(Document.collection_id == collection_id)))
            for document in documents:
                self._delete_document_rows(session, document.id)
            session.execute(delete(Collection).where(Collection.id == collection_id))
        for document in documents:
            if document.array_file:
                (self.arrays_dir / document.array_file).unlink(missing_ok=True)
        return len(documents)

    @staticmethod
    def _delete_document_rows(session: Session, document_id: int) -> None:
        # Sentences first and explicitly, so the FTS trigger removes their index entries.
        for table in (SentenceRow, SectionRow, PageRow):
            session.execute(delete(table).where(table.document_id == document_id))
        session.execute(delete(Document).where(Document.id == document_id))

    @contextmanager
    def _writing(self, exclusive: bool = False, wait: bool = True) -> Iterator[bool]:
        """Hold the library's write lock: shared while a document is written (its array file exists before its
        rows are committed), exclusive for ``repair``. Yields whether the lock was obtained. The OS releases the
        lock of a process that dies, so a crash never leaves the library locked."""
        with open(self.home / ".write.lock", "a") as handle:
            mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
            try:
                fcntl.flock(handle, mode)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def repair(self) -> list[str]:
        """Delete array files no document references (left by a crash between file write and commit); anything
        that is not a regular file (a folder someone put there) is left alone.

        Skipped while another process is writing a document, whose new file is not referenced yet."""
        with self._writing(exclusive=True, wait=False) as locked:
            return self._remove_unreferenced_files() if locked else []

    def _remove_unreferenced_files(self) -> list[str]:
        with self.session() as session:
            referenced = set(session.scalars(select(Document.array_file).where(Document.array_file.is_not(None))))
        removed = []
        for path in self.arrays_dir.iterdir():
            if path.is_file() and path.name not in referenced:
                path.unlink(missing_ok=True)
                removed.append(path.name)
        return removed

    # ----------------------------------------------------------------- reading sentences

    def search_sentences(self, collections: list[str], query: str, limit: int) -> list[SentenceHit]:
        """BM25 (SQLite FTS5, porter stemming) over the sentences of ``collections``; best first."""
        words = [w for w in _FTS_WORD.findall(query.lower()) if w not in _STOPWORDS] or _FTS_WORD.findall(query.lower())
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        with self.session() as session:
            collection_ids = [self._collection_id(session, name) for name in collections]
            placeholders = ", ".join(f":c{i}" for i in range(len(collection_ids)))
            rows = session.execute(
                text(
                    'SELECT s.id, s.document_id, d.source, d.title, s.page, s.start, s."end", s.text, '
                    "-bm25(sentences_fts) AS score FROM sentences_fts "
                    "JOIN sentences s ON s.id = sentences_fts.rowid JOIN documents d ON d.id = s.document_id "
                    f"WHERE sentences_fts MATCH :match AND d.collection_id IN ({placeholders}) "
                    "ORDER BY bm25(sentences_fts) LIMIT :limit"
                ),
                {"match": match, "limit": limit, **{f"c{i}": c for i, c in enumerate(collection_ids)}},
            )
            return [SentenceHit(*row) for row in rows]


_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its of on or that the this to was "
    "what when where which who why will with you your".split()
)

"""The library: a data directory holding ``library.db`` (SQLite, WAL, through SQLAlchemy).

Writes are all-or-nothing per document: one transaction inserts the document with its pages, sections and sentences
and deletes the version it replaces, so a crash at any point leaves either the old or the new version.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from sqlalchemy import and_, delete, func, insert, or_, select, text
from sqlalchemy.orm import Session

from ingest.document import Page, ParsedDocument, Section, Sentence
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
    shared: bool = False  # readable by every user
    owner: str = ""


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


@dataclass(frozen=True)
class SentenceRef:
    """A library sentence: its document, its index among the document's sentences, page and span."""

    document_id: int
    idx: int
    page: int | None
    paragraph: int
    start: int
    end: int
    text: str


class Library:
    def __init__(self, home: Path | None = None) -> None:
        self.home = Path(home) if home is not None else default_home()
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StorageError(f"cannot create the library folder {self.home}: {error.strerror}") from error
        self._engine, self._sessions = open_database(self.db_path)
        # Libraries of schema version 2 kept token arrays nobody read in arrays/; the upgrade dropped their column.
        shutil.rmtree(self.home / "arrays", ignore_errors=True)

    @property
    def db_path(self) -> Path:
        return self.home / "library.db"

    def session(self) -> Session:
        return self._sessions()

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A session in a transaction that holds the write lock from its first read: what it reads stays true
        until it commits (checks and writes of concurrent ingests cannot interleave)."""
        with self._engine.connect().execution_options(immediate=True) as connection:
            with self._sessions(bind=connection) as session, session.begin():
                yield session

    # ----------------------------------------------------------------- collections and documents

    @staticmethod
    def _visible(user: str):  # noqa: ANN205 (a SQLAlchemy condition)
        """The collections ``user`` may read: their own and the shared ones."""
        return or_(Collection.owner == user, Collection.shared.is_(True))

    def collection_names(self, user: str = "") -> list[str]:
        """The names of the collections ``user`` may read, each once (their own first when a shared one has the same
        name)."""
        with self.session() as session:
            return sorted(set(session.scalars(select(Collection.name).where(self._visible(user)))))

    def collections(self, user: str = "") -> list[CollectionInfo]:
        """The collections ``user`` may read, with their counts."""
        ingested = Document.status == "ingested"
        query = (
            select(
                Collection.name,
                Collection.owner,
                Collection.shared,
                func.count(Document.id).filter(ingested),
                func.count(Document.id).filter(Document.status == "error"),
                func.coalesce(func.sum(Document.pages).filter(ingested), 0),
                func.coalesce(func.sum(Document.tokens).filter(ingested), 0),
                func.coalesce(func.sum(Document.sentence_count).filter(ingested), 0),
            )
            .outerjoin(Document)
            .where(self._visible(user))
            .group_by(Collection.id)
            .order_by(Collection.name, Collection.owner != user)
        )
        with self.session() as session:
            infos, seen = [], set()
            for name, owner, shared, *counts in session.execute(query):
                if name not in seen:  # the user's own before a shared one of the same name
                    seen.add(name)
                    infos.append(CollectionInfo(name, *counts, shared=shared, owner=owner))
            return infos

    def documents(self, collection: str, user: str = "") -> list[Document]:
        with self.session() as session:
            collection_id = self._collection_id(session, collection, user)
            query = select(Document).where(Document.collection_id == collection_id).order_by(Document.source)
            return list(session.scalars(query))

    def ingested_documents(self) -> list[tuple[int, str, str]]:
        """(id, content hash, owner of its collection) of every ingested document of the library, every user's,
        oldest first."""
        with self.session() as session:
            query = (
                select(Document.id, Document.content_hash, Collection.owner)
                .join(Collection, Document.collection_id == Collection.id)
                .where(Document.status == "ingested")
            )
            return [(i, h, owner) for i, h, owner in session.execute(query.order_by(Document.id))]

    def document_sizes(self) -> list[tuple[int, int]]:
        """(id, tokens) of every ingested document of the library, oldest first (how shards are assigned)."""
        with self.session() as session:
            query = select(Document.id, Document.tokens).where(Document.status == "ingested").order_by(Document.id)
            return [(i, tokens) for i, tokens in session.execute(query)]

    def document(self, document_id: int, with_text: bool = False, user: str | None = None) -> Document | None:
        """The document, None when absent or (given ``user``) in a collection ``user`` may not read."""
        with self.session() as session:
            document = session.get(Document, document_id)
            if document is not None and user is not None:
                collection = session.get(Collection, document.collection_id)
                if collection is None or not (collection.owner == user or collection.shared):
                    return None
            if document is not None and with_text:
                _ = document.text  # load the deferred column before the session closes
            return document

    def parsed_document(self, document_id: int) -> ParsedDocument | None:
        """The stored document with its text, pages, sections and sentences; None when absent or not ingested."""
        with self.session() as session:
            document = session.get(Document, document_id)
            if document is None or document.status != "ingested":
                return None
            pages = session.scalars(select(PageRow).where(PageRow.document_id == document_id).order_by(PageRow.number))
            sections = session.scalars(
                select(SectionRow).where(SectionRow.document_id == document_id).order_by(SectionRow.idx)
            )
            return ParsedDocument(
                source=document.source,
                title=document.title,
                kind=document.kind,
                content_hash=document.content_hash,
                text=document.text,
                pages=[Page(p.number, p.start, p.end, p.needs_ocr) for p in pages],
                sections=[Section(s.title, s.kind, s.start, s.end) for s in sections],
                sentences=[
                    Sentence(s.start, s.end, s.page, s.section_idx, s.paragraph)
                    for s in session.scalars(self._sentences_of(document_id))
                ],
            )

    @staticmethod
    def _sentences_of(document_id: int):  # noqa: ANN205 (a SQLAlchemy select)
        return select(SentenceRow).where(SentenceRow.document_id == document_id).order_by(SentenceRow.idx)

    def sentence_spans(self, document_id: int) -> list[tuple[int, int, int]]:
        """(start, end, paragraph) of each of the document's sentences, in order."""
        query = (
            select(SentenceRow.start, SentenceRow.end, SentenceRow.paragraph)
            .where(SentenceRow.document_id == document_id)
            .order_by(SentenceRow.idx)
        )
        with self.session() as session:
            return [tuple(row) for row in session.execute(query)]

    def reference_sentences(self, document_id: int) -> list[int]:
        """The indices among the document's sentences of those in its references section, ascending."""
        references = select(SectionRow.idx).where(
            SectionRow.document_id == document_id, SectionRow.kind == "references"
        )
        query = (
            select(SentenceRow.idx)
            .where(SentenceRow.document_id == document_id, SentenceRow.section_idx.in_(references))
            .order_by(SentenceRow.idx)
        )
        with self.session() as session:
            return list(session.scalars(query))

    def sentences_at(self, refs: Sequence[tuple[int, int]]) -> list[SentenceRef]:
        """The sentences named by (document id, index among its sentences), in the order asked; StorageError when
        one is no longer in the library."""
        if not refs:
            return []
        wanted = [and_(SentenceRow.document_id == d, SentenceRow.idx == i) for d, i in sorted(set(refs))]
        query = select(SentenceRow).where(or_(*wanted))  # one index search each (a tuple IN scans the whole table)
        with self.session() as session:
            found = {(r.document_id, r.idx): r for r in session.scalars(query)}
        missing = [ref for ref in refs if ref not in found]
        if missing:
            raise StorageError(f"document {missing[0][0]} changed or left the library; ask again")
        return [
            SentenceRef(r.document_id, r.idx, r.page, r.paragraph, r.start, r.end, r.text)
            for r in (found[ref] for ref in refs)
        ]

    def text_windows(self, document_id: int, spans: Sequence[tuple[int, int]]) -> list[str]:
        """The document's ``text[start:end]`` of each of ``spans`` (clipped to the text), read in one query without
        loading the whole text into Python; "" each when the document is absent."""
        if not spans:
            return []
        columns = [func.substr(Document.text, max(0, a) + 1, max(0, b - max(0, a))) for a, b in spans]
        with self.session() as session:
            row = session.execute(select(*columns).where(Document.id == document_id)).first()
        return [w or "" for w in row] if row else [""] * len(spans)

    def page_span(self, document_id: int, page: int) -> tuple[int, int] | None:
        """The character span of page ``page`` (1-based) of the document's text; None when it has no such page."""
        query = select(PageRow.start, PageRow.end).where(PageRow.document_id == document_id, PageRow.number == page)
        with self.session() as session:
            row = session.execute(query).first()
        return (row.start, row.end) if row else None

    def _collection_id(self, session: Session, name: str, user: str, write: bool = False) -> int:
        """The collection ``name`` as ``user`` sees it: their own, else (to read) a shared one; StorageError naming
        only the collections the user may see."""
        query = select(Collection.id).where(Collection.name == name)
        if write:
            query = query.where(Collection.owner == user)
        else:
            query = query.where(self._visible(user)).order_by(Collection.owner != user, Collection.id)
        collection_id = session.scalar(query)
        if collection_id is None:
            known = self.collection_names(user)
            if write and name in known:
                raise StorageError(f"collection '{name}' is shared with you by its owner: only they can change it")
            raise StorageError(f"no collection named '{name}' (collections: {', '.join(known) or 'none yet'})")
        return collection_id

    def _get_or_create_collection(self, session: Session, name: str, user: str) -> int:
        """The id of ``user``'s collection ``name``, created when it does not exist (call it in ``writing()``)."""
        collection_id = session.scalar(select(Collection.id).where(Collection.name == name, Collection.owner == user))
        if collection_id is None:
            collection = Collection(name=name, owner=user)
            session.add(collection)
            session.flush()
            collection_id = collection.id
        return collection_id

    def ensure_collection(self, name: str, user: str = "") -> None:
        if not name.strip():
            raise StorageError("a collection needs a non-empty name")
        with self.writing() as session:
            self._get_or_create_collection(session, name, user)

    def set_shared(self, name: str, shared: bool, user: str = "") -> None:
        """Share ``user``'s collection ``name`` with every user (read only), or stop sharing it."""
        with self.writing() as session:
            session.get(Collection, self._collection_id(session, name, user, write=True)).shared = shared

    def is_unchanged(self, collection: str, source: str, content_hash: str, user: str = "") -> bool:
        """True when ``source`` is already ingested in ``user``'s ``collection`` with this exact content."""
        with self.session() as session:
            query = (
                select(Document.id)
                .join(Collection)
                .where(Collection.name == collection, Collection.owner == user, Document.source == source)
                .where(Document.content_hash == content_hash, Document.status == "ingested")
            )
            return session.scalar(query) is not None

    # ----------------------------------------------------------------- writing

    def store(self, collection: str, parsed: ParsedDocument, tokens: int = 0, user: str = "") -> StoreResult:
        """Store one parsed document of ``tokens`` model tokens in ``user``'s ``collection``: a no-op if unchanged, a
        replacement if its source changed. One transaction holding the write lock throughout, so a concurrent ingest
        of the same source finds it stored ("unchanged", or "duplicate" under another name)."""
        with self.writing() as session:
            collection_id = self._get_or_create_collection(session, collection, user)
            settled = self._settled(session, collection_id, parsed)
            if settled is not None:
                return settled
            previous = session.scalar(
                select(Document).where(Document.collection_id == collection_id, Document.source == parsed.source)
            )
            replaced = previous is not None and previous.status == "ingested"
            if previous is not None:
                self._delete_document_rows(session, previous.id)
            document_id = self._insert_document(session, collection_id, parsed, tokens)
        return StoreResult("replaced" if replaced else "ingested", document_id)

    def _settled(self, session: Session, collection_id: int, parsed: ParsedDocument) -> StoreResult | None:
        """ "unchanged" or "duplicate" when the collection already holds this content, else None."""
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
        return None

    def _insert_document(self, session: Session, collection_id: int, parsed: ParsedDocument, tokens: int) -> int:
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
            tokens=tokens,
            chars=len(parsed.text),
            sentence_count=len(parsed.sentences),
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
                        "text": parsed.text[s.start : s.end],
                    }
                    for i, s in enumerate(parsed.sentences)
                ],
            )
        return document.id

    def record_error(
        self, collection: str, source: str, message: str, content_hash: str = "", user: str = ""
    ) -> StoreResult:
        """Remember that ``source`` failed; an earlier good version of it is kept untouched."""
        with self.writing() as session:
            collection_id = self._get_or_create_collection(session, collection, user)
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

    def remove_document(self, document_id: int, user: str = "") -> Document:
        """Remove a document of one of ``user``'s collections."""
        with self.writing() as session:
            document = session.get(Document, document_id)
            owner = (
                session.scalar(select(Collection.owner).where(Collection.id == document.collection_id))
                if document
                else None
            )
            if document is None or owner != user:
                raise StorageError(f"no document with id {document_id}")
            self._delete_document_rows(session, document_id)
        return document

    def remove_collection(self, name: str, user: str = "") -> int:
        """Remove ``user``'s collection with all its documents; returns how many documents went."""
        with self.writing() as session:
            collection_id = self._collection_id(session, name, user, write=True)
            documents = list(session.scalars(select(Document).where(Document.collection_id == collection_id)))
            for document in documents:
                self._delete_document_rows(session, document.id)
            session.execute(delete(Collection).where(Collection.id == collection_id))
        return len(documents)

    @staticmethod
    def _delete_document_rows(session: Session, document_id: int) -> None:
        # Sentences first and explicitly, so the FTS trigger removes their index entries.
        for table in (SentenceRow, SectionRow, PageRow):
            session.execute(delete(table).where(table.document_id == document_id))
        session.execute(delete(Document).where(Document.id == document_id))

    # ----------------------------------------------------------------- reading sentences

    def search_sentences(self, collections: list[str], query: str, limit: int, user: str = "") -> list[SentenceHit]:
        """BM25 (SQLite FTS5, porter stemming) over the sentences of ``collections`` (as ``user`` sees them); best
        first."""
        words = search_words(query)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        with self.session() as session:
            collection_ids = [self._collection_id(session, name, user) for name in collections]
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

    def words_held(self, hit: SentenceHit, query: str) -> int:
        """How many of ``query``'s search words (``search_words``) the sentence of ``hit`` and the sentences beside
        it in its document hold, as the search matches them (porter stemming)."""
        around = (
            "SELECT count(*) FROM sentences_fts WHERE sentences_fts MATCH :word AND rowid IN "
            "(SELECT id FROM sentences WHERE document_id = :doc AND id BETWEEN :id - 1 AND :id + 1)"
        )
        with self.session() as session:
            return sum(
                session.execute(
                    text(around), {"word": f'"{word}"', "doc": hit.document_id, "id": hit.sentence_id}
                ).scalar_one()
                > 0
                for word in search_words(query)
            )


def search_words(query: str) -> list[str]:
    """The distinct words BM25 looks for: the query's words but stop words (all of them when that leaves none)."""
    found = _FTS_WORD.findall(query.lower())
    return list(dict.fromkeys([w for w in found if w not in _STOPWORDS] or found))


_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its of on or that the this to was "
    "what when where which who why will with you your".split()
)

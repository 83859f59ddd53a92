"""SQLAlchemy 2 models of the library: collections, documents and their spans, sessions, answers, metrics.

Every character span (``start``, ``end``) indexes the document's extracted text (``Document.text``), so a
citation's quoted text is always ``document.text[start:end]``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, deferred, mapped_column, relationship

SCHEMA_VERSION = 5  # storage/db.py: MIGRATIONS upgrades older libraries in place


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Collection(Base):
    """A named set of documents of one user ("" without authentication: the CLI's and a single-user app's); a shared
    collection can be read by every user, and changed only by its owner."""

    __tablename__ = "collections"
    __table_args__ = (UniqueConstraint("owner", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    owner: Mapped[str] = mapped_column(String(200), default="", server_default="")
    shared: Mapped[bool] = mapped_column(default=False, server_default="0")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    documents: Mapped[list[Document]] = relationship(
        back_populates="collection", cascade="all, delete-orphan", passive_deletes=True
    )


class Document(Base):
    """One ingested source. ``status`` is "ingested" or "error" (then ``error`` says why and there are no spans)."""

    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("collection_id", "source"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    collection_id: Mapped[int] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"), index=True)
    source: Mapped[str] = mapped_column(Text)
    title: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(16), default="")
    content_hash: Mapped[str] = mapped_column(String(64), index=True, default="")
    status: Mapped[str] = mapped_column(String(16), default="ingested")
    error: Mapped[str | None] = mapped_column(Text, default=None)
    warnings: Mapped[list[Any]] = mapped_column(default=list)
    pages: Mapped[int] = mapped_column(default=0)
    needs_ocr_pages: Mapped[list[Any]] = mapped_column(default=list)
    tokens: Mapped[int] = mapped_column(default=0)
    chars: Mapped[int] = mapped_column(default=0)
    sentence_count: Mapped[int] = mapped_column(default=0)
    text: Mapped[str] = deferred(mapped_column(Text, default=""))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    collection: Mapped[Collection] = relationship(back_populates="documents")


class PageRow(Base):
    __tablename__ = "pages"
    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    number: Mapped[int]
    start: Mapped[int]
    end: Mapped[int]
    needs_ocr: Mapped[bool] = mapped_column(default=False)


class SectionRow(Base):
    __tablename__ = "sections"
    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    idx: Mapped[int]
    title: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(16))
    start: Mapped[int]
    end: Mapped[int]


class SentenceRow(Base):
    """A sentence and its place: document, page, section, paragraph and character span."""

    __tablename__ = "sentences"
    __table_args__ = (Index("ix_sentences_doc_idx", "document_id", "idx"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    idx: Mapped[int]
    page: Mapped[int | None]
    section_idx: Mapped[int | None]
    paragraph: Mapped[int]
    start: Mapped[int]
    end: Mapped[int]
    text: Mapped[str] = mapped_column(Text)


class ChatSession(Base):
    __tablename__ = "sessions"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(String(200), default="", index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class AnswerRow(Base):
    """A question, the collections it was asked over, the answer and how it was produced."""

    __tablename__ = "answers"
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    question: Mapped[str] = mapped_column(Text)
    collections: Mapped[list[Any]] = mapped_column(default=list)
    answer: Mapped[str] = mapped_column(Text)
    generated: Mapped[str | None] = mapped_column(Text, default=None)  # prose a generator wrote from the citations
    reader: Mapped[str] = mapped_column(String(64))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    timings_ms: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    citations: Mapped[list[CitationRow]] = relationship(
        cascade="all, delete-orphan", passive_deletes=True, order_by="CitationRow.rank"
    )


class CitationRow(Base):
    """A cited span, copied at answer time so the history survives removal of the document."""

    __tablename__ = "citations"
    id: Mapped[int] = mapped_column(primary_key=True)
    answer_id: Mapped[int] = mapped_column(ForeignKey("answers.id", ondelete="CASCADE"), index=True)
    rank: Mapped[int]
    document_id: Mapped[int | None] = mapped_column(ForeignKey("documents.id", ondelete="SET NULL"))
    source: Mapped[str] = mapped_column(Text)
    title: Mapped[str] = mapped_column(Text)
    page: Mapped[int | None]
    start: Mapped[int]
    end: Mapped[int]
    text: Mapped[str] = mapped_column(Text)
    score: Mapped[float]
    speaker: Mapped[str] = mapped_column(Text, default="")  # a transcript's speaker of the turn ("" elsewhere)


class SummaryRow(Base):
    __tablename__ = "summaries"
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id", ondelete="SET NULL"))
    scope: Mapped[str] = mapped_column(String(16))  # "document", "selection" or "collection"
    document_ids: Mapped[list[Any]] = mapped_column(default=list)
    collection: Mapped[str | None] = mapped_column(Text)
    summary: Mapped[str] = mapped_column(Text)
    citations: Mapped[list[Any]] = mapped_column(default=list)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    scores: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class MetricRecord(Base):
    """One request's measurements (per-stage timings, cache bytes, hit rate, ...) for the dashboard."""

    __tablename__ = "metrics"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)  # "ask", "ingest", "summarize", "bench"
    user: Mapped[str] = mapped_column(String(200), default="", server_default="")  # who made the request
    session_id: Mapped[int | None] = mapped_column(ForeignKey("sessions.id", ondelete="SET NULL"))
    collection: Mapped[str | None] = mapped_column(Text)
    total_ms: Mapped[float] = mapped_column(default=0.0)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)

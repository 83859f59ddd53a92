"""Read-only queries for the app: a stored document back as a ``ParsedDocument``, page spans, metric records."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from ingest.document import Page, ParsedDocument, Section, Sentence
from storage.library import Library
from storage.models import Document, MetricRecord, PageRow, SectionRow, SentenceRow


def parsed_document(library: Library, document_id: int) -> ParsedDocument | None:
    """The stored document with its text, pages, sections and sentences (no token arrays); None when absent."""
    with library.session() as session:
        document = session.get(Document, document_id)
        if document is None or document.status != "ingested":
            return None
        pages = session.scalars(select(PageRow).where(PageRow.document_id == document_id).order_by(PageRow.number))
        sections = session.scalars(
            select(SectionRow).where(SectionRow.document_id == document_id).order_by(SectionRow.idx)
        )
        sentences = session.scalars(
            select(SentenceRow).where(SentenceRow.document_id == document_id).order_by(SentenceRow.idx)
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
                Sentence(s.start, s.end, s.page, s.section_idx, s.paragraph, s.token_start, s.token_end)
                for s in sentences
            ],
        )


def page_span(library: Library, document_id: int, page: int) -> tuple[int, int] | None:
    """The character span of page ``page`` (1-based) of the document's text; None when it has no such page."""
    query = select(PageRow.start, PageRow.end).where(PageRow.document_id == document_id, PageRow.number == page)
    with library.session() as session:
        row = session.execute(query).first()
    return (row.start, row.end) if row else None


def metric_records(library: Library, since: datetime | None = None, limit: int = 10_000) -> list[dict[str, Any]]:
    """The most recent ``limit`` metric records (created after ``since`` when given), oldest first."""
    query = select(MetricRecord).order_by(MetricRecord.created_at.desc(), MetricRecord.id.desc()).limit(limit)
    if since is not None:
        query = query.where(MetricRecord.created_at > since)
    with library.session() as session:
        rows = list(session.scalars(query))
    return [
        {
            "id": row.id,
            "kind": row.kind,
            "created_at": row.created_at,
            "collection": row.collection,
            "session_id": row.session_id,
            "total_ms": row.total_ms,
            "data": row.data,
        }
        for row in reversed(rows)
    ]

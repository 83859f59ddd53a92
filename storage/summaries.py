"""Stored summaries: the one place a ``SummaryRow`` is written (by the Summarize tab and the batch command)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from storage.library import Library
from storage.models import Document, SummaryRow


class SummaryStore:
    def __init__(self, library: Library) -> None:
        self.library = library

    def add(
        self,
        scope: str,
        document_ids: list[int],
        collection: str | None,
        summary: str,
        citations: list[dict[str, Any]],
        settings: dict[str, Any],
        scores: dict[str, Any],
    ) -> int:
        """Store a summary (``scope``: "document", "selection" or "collection"); returns its id."""
        with self.library.writing() as session:
            row = SummaryRow(
                scope=scope,
                document_ids=document_ids,
                collection=collection,
                summary=summary,
                citations=citations,
                settings=settings,
                scores=scores,
            )
            session.add(row)
            session.flush()
            return row.id

    def documents_with_content(self, content_hash: str) -> list[int]:
        """The ingested documents whose file has this content (a batch summary is linked to them)."""
        query = select(Document.id).where(Document.content_hash == content_hash, Document.status == "ingested")
        with self.library.session() as session:
            return list(session.scalars(query))

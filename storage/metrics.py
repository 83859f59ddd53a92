"""Metric records (one per request: asks, summaries, benchmarks) for the dashboard: the one place they are written
and read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from storage.library import Library
from storage.models import MetricRecord


class MetricStore:
    def __init__(self, library: Library) -> None:
        self.library = library

    def add(
        self,
        kind: str,
        total_ms: float,
        data: dict[str, Any],
        collection: str | None = None,
        session_id: int | None = None,
        user: str = "",
    ) -> None:
        """Record one request of ``kind`` ("ask", "summarize", "bench") made by ``user``."""
        with self.library.writing() as session:
            session.add(
                MetricRecord(
                    kind=kind,
                    user=user,
                    collection=collection,
                    session_id=session_id,
                    total_ms=round(total_ms, 2),
                    data=data,
                )
            )

    def records(self, user: str = "", since: datetime | None = None, limit: int = 10_000) -> list[dict[str, Any]]:
        """``user``'s most recent ``limit`` records (created after ``since`` when given), oldest first."""
        query = (
            select(MetricRecord)
            .where(MetricRecord.user == user)
            .order_by(MetricRecord.created_at.desc(), MetricRecord.id.desc())
            .limit(limit)
        )
        if since is not None:
            query = query.where(MetricRecord.created_at > since)
        with self.library.session() as session:
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

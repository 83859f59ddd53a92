"""Chat sessions and answers: create, list, rename, delete, read back and export sessions; record an answer with its
citations (the one place answers are written).

Every call names the ``user`` it acts for ("" without authentication); a session of another user is reported as
missing, so users never see each other's sessions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from storage.db import StorageError
from storage.library import Library
from storage.models import AnswerRow, ChatSession, CitationRow, utcnow


@dataclass(frozen=True)
class SessionInfo:
    id: int
    name: str
    questions: int
    created_at: str
    updated_at: str


class SessionStore:
    def __init__(self, library: Library) -> None:
        self.library = library

    def create(self, name: str, user: str = "") -> SessionInfo:
        name = name.strip()
        if not name:
            raise StorageError("a session needs a non-empty name")
        with self.library.writing() as session:
            row = ChatSession(name=name, user=user)
            session.add(row)
            session.flush()
            session_id = row.id
        return self.info(session_id, user)

    def list(self, user: str = "") -> list[SessionInfo]:
        query = (
            select(ChatSession, func.count(AnswerRow.id))
            .outerjoin(AnswerRow, AnswerRow.session_id == ChatSession.id)
            .where(ChatSession.user == user)
            .group_by(ChatSession.id)
            .order_by(ChatSession.updated_at.desc(), ChatSession.id.desc())
        )
        with self.library.session() as session:
            return [_info(row, count) for row, count in session.execute(query)]

    def info(self, session_id: int, user: str = "") -> SessionInfo:
        return next((s for s in self.list(user) if s.id == session_id), None) or self._missing(session_id)

    def check(self, session_id: int, user: str = "") -> None:
        """Raise StorageError unless ``session_id`` exists and belongs to ``user``."""
        with self.library.session() as session:
            row = session.get(ChatSession, session_id)
        if row is None or row.user != user:
            self._missing(session_id)

    def record_answer(
        self,
        session_id: int | None,
        question: str,
        collections: list[str],
        answer: str,
        generated: str | None,
        reader: str,
        settings: dict[str, Any],
        timings_ms: dict[str, float],
        citations: list[dict[str, Any]],
    ) -> int:
        """Store an answer (in ``session_id`` when given, which then moves to the top of the list) with its
        citations, each ``{"doc", "source", "title", "page", "start", "end", "text", "score", "speaker"?}`` in rank
        order; returns the answer's id. Citations are copied, so the history survives removal of the documents."""
        with self.library.writing() as session:
            row = AnswerRow(
                session_id=session_id,
                question=question,
                collections=collections,
                answer=answer,
                generated=generated,
                reader=reader,
                settings=settings,
                timings_ms=timings_ms,
            )
            row.citations = [
                CitationRow(
                    rank=rank,
                    document_id=c["doc"],
                    source=c["source"],
                    title=c["title"],
                    page=c["page"],
                    start=c["start"],
                    end=c["end"],
                    text=c["text"],
                    score=c["score"],
                    speaker=c.get("speaker") or "",
                )
                for rank, c in enumerate(citations)
            ]
            session.add(row)
            if session_id is not None:
                chat = session.get(ChatSession, session_id)
                if chat is not None:
                    chat.updated_at = utcnow()
            session.flush()
            return row.id

    def rename(self, session_id: int, name: str, user: str = "") -> SessionInfo:
        self.check(session_id, user)
        if not name.strip():
            raise StorageError("a session needs a non-empty name")
        with self.library.writing() as session:
            session.get(ChatSession, session_id).name = name.strip()
        return self.info(session_id, user)

    def delete(self, session_id: int, user: str = "") -> None:
        """Delete the session with its questions, answers and citations."""
        self.check(session_id, user)
        with self.library.writing() as session:
            session.delete(session.get(ChatSession, session_id))

    def history(self, session_id: int, user: str = "") -> list[dict[str, Any]]:
        """The session's questions and answers, oldest first, each with its citations."""
        self.check(session_id, user)
        query = (
            select(AnswerRow)
            .where(AnswerRow.session_id == session_id)
            .options(selectinload(AnswerRow.citations))
            .order_by(AnswerRow.id)
        )
        with self.library.session() as session:
            return [_answer_json(row) for row in session.scalars(query)]

    def export(self, session_id: int, fmt: str, user: str = "") -> str:
        """The session as Markdown (``md``) or JSON (``json``)."""
        info = self.info(session_id, user)
        history = self.history(session_id, user)
        if fmt == "json":
            return json.dumps({"session": info.__dict__, "questions": history}, indent=2, ensure_ascii=False)
        if fmt != "md":
            raise StorageError(f"unknown export format '{fmt}' (md or json)")
        lines = [f"# {info.name}", "", f"Session {info.id}, created {info.created_at}.", ""]
        for turn in history:
            lines += [f"## {turn['question']}", ""]
            if turn["generated"] is not None:
                lines += [f"*{turn['settings'].get('generator', 'generator')}* (generated from the citations):", ""]
                lines += [turn["generated"], "", "Extractive answer (quoted from the documents):", ""]
            lines += [turn["answer"], ""]
            for rank, c in enumerate(turn["citations"], start=1):
                where = c["title"] + (f", page {c['page']}" if c["page"] else "")
                said = f"{c['speaker']}: " if c["speaker"] else ""
                lines.append(f"{rank}. *{where}* (characters {c['start']}–{c['end']}): “{said}{c['text']}”")
            lines += [
                "",
                f"<sub>{turn['reader']} · {turn['timings_ms'].get('total', 0):.0f} ms · "
                f"{', '.join(turn['collections'])} · {turn['created_at']}</sub>",
                "",
            ]
        return "\n".join(lines)

    @staticmethod
    def _missing(session_id: int) -> SessionInfo:
        raise StorageError(f"no session with id {session_id}")


def _info(row: ChatSession, questions: int) -> SessionInfo:
    return SessionInfo(
        row.id,
        row.name,
        questions,
        row.created_at.isoformat(timespec="seconds"),
        row.updated_at.isoformat(timespec="seconds"),
    )


def _answer_json(row: AnswerRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "question": row.question,
        "answer": row.answer,
        "generated": row.generated,
        "reader": row.reader,
        "collections": row.collections,
        "settings": row.settings,
        "timings_ms": row.timings_ms,
        "created_at": row.created_at.isoformat(timespec="seconds"),
        "citations": [
            {
                "doc": c.document_id,
                "title": c.title,
                "source": c.source,
                "page": c.page,
                "start": c.start,
                "end": c.end,
                "text": c.text,
                "score": c.score,
                "speaker": c.speaker,
            }
            for c in row.citations
        ],
    }

"""Readers turn a question over collections into an extractive answer with citations.

``Reader`` is the interface every question-answering path goes through. ``BM25Reader`` is the baseline: BM25
(SQLite FTS5 with Porter stemming) over the sentences of the chosen collections. The answer is made of the best
sentences themselves, so every answer sentence is a quotation of a cited span. ``IndexPoolReader`` (reader
"indexpool", :mod:`model.indexpool_reader`) answers with the trained model; it is imported only when it reads, and
can run only where its checkpoint is installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from model.checkpoint import indexpool_checkpoint
from storage.library import Library


@dataclass
class Citation:
    doc: int  # document id in the library
    source: str
    title: str
    page: int | None
    start: int  # character span in the document's extracted text
    end: int
    text: str  # == document text[start:end]
    score: float


@dataclass
class Answer:
    answer: str
    citations: list[Citation]
    reader: str
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The documented ``ask --json`` object."""
        return {
            "answer": self.answer,
            "citations": [
                {
                    k: v
                    for k, v in asdict(c).items()
                    if k in {"doc", "title", "page", "start", "end", "text", "score"}
                }
                | {"source": c.source}
                for c in self.citations
            ],
            "timings_ms": self.timings_ms,
            "reader": self.reader,
        }


class Reader(Protocol):
    name: str

    def answer(self, library: Library, collections: list[str], question: str, top_k: int) -> Answer: ...


class BM25Reader:
    """Baseline reader: the answer is the best-scoring sentence(s) and the citations are the top-k sentences."""

    name = "bm25"

    def __init__(self, answer_sentences: int = 2, relative_score: float = 0.8) -> None:
        self.answer_sentences = answer_sentences  # at most this many sentences form the answer
        self.relative_score = relative_score  # ...each scoring at least this fraction of the best one

    def answer(self, library: Library, collections: list[str], question: str, top_k: int) -> Answer:
        started = time.perf_counter()
        hits = library.search_sentences(collections, question, limit=top_k)
        retrieve_ms = (time.perf_counter() - started) * 1000
        citations = [
            Citation(h.document_id, h.source, h.title, h.page, h.start, h.end, h.text, round(h.score, 4))
            for h in hits
        ]
        if not citations:
            text = "No sentence in the chosen collections matches the question."
        else:
            best = citations[0].score
            chosen = [c for c in citations[: self.answer_sentences] if c.score >= self.relative_score * best]
            text = " ".join(f"{c.text} [{i + 1}]" for i, c in enumerate(chosen))
        total_ms = (time.perf_counter() - started) * 1000
        return Answer(
            text, citations, self.name, {"retrieve": round(retrieve_ms, 2), "total": round(total_ms, 2)}
        )


class ReaderUnavailable(Exception):
    """The reader cannot run here (e.g. its model is not installed); the message says why."""


def _indexpool_reader() -> Reader:
    from model.indexpool_reader import IndexPoolReader  # imports torch: only when the model reads

    return IndexPoolReader()


READERS: dict[str, Callable[[], Reader]] = {"bm25": BM25Reader, "indexpool": _indexpool_reader}


def available_readers() -> list[str]:
    """The readers that can run here: "indexpool" only when its checkpoint is installed."""
    return [name for name in READERS if name != "indexpool" or indexpool_checkpoint().is_file()]

"""``eval qa``: evidence recall@1/5/10, document@1, answer ROUGE-L and latency of each QA system on the same corpus.

Inputs (JSONL): documents ``{"id", "text", "title"?}``; questions ``{"id", "question", "answers": [str], "evidence":
[{"doc", "start", "end"}], "doc"?}`` with character spans in the document texts, or without evidence but with
``"doc"``, the question's document: then a hit is a cited span of that document holding the answer
(``metrics.answer_hit_rank``). Every system indexes the whole corpus (``index_s``), or with ``--scope document``
each document alone for the questions that name it (an L-Eval question is about its own input: "this contract"),
then answers each question with up to 10 citations; the latency is the wall time of one ``ask``. ``document@1``: the
first citation lies in a document holding gold evidence (over a collection, whether the system found the right
document at all). Questions with neither evidence nor a document count for ROUGE-L only. A citation of an unknown
document or of more than ``MAX_CITATION_WORDS`` words stops the run with an error.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from model.research.evaluation.datasets import read_jsonl
from model.research.evaluation.metrics import (
    Span,
    answer_hit_rank,
    check_citations,
    first_hit_rank,
    latency_percentiles,
    recall_at,
    rouge,
)
from model.research.evaluation.systems import Document, QASystem, available, make_qa_system

RECALL_AT = (1, 5, 10)


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: list[str]
    evidence: list[Span]
    document: str | None = None  # the question's document, when a hit is counted by the answer

    @property
    def scored(self) -> bool:
        """Whether recall counts this question (it has evidence, or a document and an answer)."""
        return bool(self.evidence) or (self.document is not None and bool(self.answers))


def load_documents(path: Path) -> list[Document]:
    return [Document(str(row["id"]), row["text"], row.get("title") or "") for row in read_jsonl(path)]


def load_questions(path: Path, limit: int | None = None) -> list[Question]:
    rows = read_jsonl(path)[:limit]
    return [
        Question(
            str(row["id"]),
            row["question"],
            list(row.get("answers") or []),
            [Span(str(e["doc"]), int(e["start"]), int(e["end"])) for e in row.get("evidence") or []],
            str(row["doc"]) if row.get("doc") is not None else None,
        )
        for row in rows
    ]


@dataclass
class Tally:
    """What a system's answers scored, question by question (see :func:`evaluate_system`)."""

    ranks: list[int | None]
    document_hits: list[bool]
    rouge_l: list[float]
    latencies: list[float]
    index_s: float = 0.0

    def add(self, other: Tally) -> None:
        self.ranks += other.ranks
        self.document_hits += other.document_hits
        self.rouge_l += other.rouge_l
        self.latencies += other.latencies
        self.index_s += other.index_s

    def result(self) -> dict[str, float]:
        result = {f"recall@{k}": recall_at(self.ranks, k) for k in RECALL_AT}
        hits = self.document_hits
        result["document@1"] = sum(hits) / len(hits) if hits else float("nan")
        result["rougeL"] = sum(self.rouge_l) / len(self.rouge_l) if self.rouge_l else float("nan")
        result |= latency_percentiles(self.latencies)
        result["index_s"] = self.index_s
        return result


def evaluate_system(
    system: QASystem,
    documents: Sequence[Document],
    questions: Sequence[Question],
    per_question: list[dict[str, Any]] | None = None,
) -> Tally:
    """Index ``documents`` with ``system`` and score it on ``questions``."""
    started = time.perf_counter()
    system.index(documents)
    tally = Tally([], [], [], [], time.perf_counter() - started)
    texts = {d.id: d.text for d in documents}
    for q in questions:
        started = time.perf_counter()
        response = system.ask(q.question, max(RECALL_AT))
        tally.latencies.append((time.perf_counter() - started) * 1000)
        cited = response.citations[: max(RECALL_AT)]
        check_citations(texts, cited, system.name)
        if q.evidence:
            rank = first_hit_rank(cited, q.evidence)
        else:
            rank = answer_hit_rank(cited, texts, q.document, q.answers) if q.scored else None
        if q.scored:
            tally.ranks.append(rank)
            gold_documents = {e.doc for e in q.evidence} or {q.document}
            tally.document_hits.append(bool(cited) and cited[0].doc in gold_documents)
        score = rouge(response.answer, q.answers, ("rougeL",))["rougeL"] if q.answers else None
        if score is not None:
            tally.rouge_l.append(score)
        if per_question is not None:
            per_question.append(
                {
                    "system": system.name,
                    "id": q.id,
                    "rank": rank,
                    "rougeL": score,
                    "answer": response.answer,
                    "citations": [asdict(c) for c in response.citations[:3]],
                }
            )
    return tally


def evaluate_per_document(
    system: QASystem,
    documents: Sequence[Document],
    questions: Sequence[Question],
    per_question: list[dict[str, Any]] | None = None,
) -> Tally:
    """Each document indexed alone and asked its own questions (``"doc"``), as a user who chose that file; the
    questions without a document are asked over the whole corpus."""
    by_id = {d.id: d for d in documents}
    tally = Tally([], [], [], [])
    groups: dict[str | None, list[Question]] = {}
    for q in questions:
        groups.setdefault(q.document if q.document in by_id else None, []).append(q)
    for doc, asked in groups.items():
        scope = [by_id[doc]] if doc is not None else documents
        tally.add(evaluate_system(system, scope, asked, per_question))
    return tally


def run_qa(
    corpus: Path,
    questions_path: Path,
    systems: Sequence[str],
    limit: int | None = None,
    per_question: list[dict[str, Any]] | None = None,
    scope: str = "corpus",
) -> dict[str, Any]:
    """The ``eval qa --json`` object; ``scope`` "document" asks each question naming its document over that document
    alone (:func:`evaluate_per_document`), "corpus" over every document."""
    documents = load_documents(corpus)
    questions = load_questions(questions_path, limit)
    report: dict[str, Any] = {
        "questions": len(questions),
        "evidence_questions": sum(bool(q.evidence) for q in questions),
        "answer_questions": sum(q.scored and not q.evidence for q in questions),
        "documents": len(documents),
        "scope": scope,
        "systems": {},
    }
    evaluate = evaluate_per_document if scope == "document" else evaluate_system
    for name, system in available(systems, make_qa_system, report):
        print(
            f"eval qa: {name} on {len(questions)} questions over {len(documents)} documents",
            file=sys.stderr,
            flush=True,
        )
        report["systems"][name] = evaluate(system, documents, questions, per_question).result()
    return report

"""The interfaces every evaluated system implements, and the registry the tasks pick systems from.

A ``QASystem`` indexes a corpus once and then answers questions with ranked citations (character spans of
passages of at most ~200 words, ``model.inference.passages``) and an extractive answer. Summarizers are the
product's (``model.inference.summarizers``), given each text's sentences as the library splits them.

The IndexPool model is the system ``indexpool``: the shipped evidence score, its read over the default cache
(IndexPool 4:1 INT8). Its variants (``QA_VARIANTS``) change the read's cache (``-r1`` uncompressed, ``-r4`` without
INT8, ``-mean``, ``-static``, ``-quest``), the score (``-read``: the read term alone; ``-noread``: the shipped
weights with the read's weight 0), or both (``indexpool-read-quest``). Without its checkpoint it is reported as
unavailable, with the reason, and never replaced by anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from model.inference.qa import CollectionIndex, Question, answer, read, read_cache
from model.inference.read import CacheConfig
from model.inference.summarizers import SUMMARIZERS, Summarizer, SummarizerUnavailable, make_summarizer
from model.network.checkpoint import CheckpointMissing, EvidenceWeights, Model, load_model
from model.research.evaluation.baselines import BM25System, DenseSystem
from model.research.evaluation.documents import Document, QASystem, Response
from model.research.evaluation.metrics import Span
from model.research.evaluation.passages import document_text

QA_SYSTEMS = ("indexpool", "bm25", "dense")
CACHE_VARIANTS = {  # the read's cache; all but r1 hold the same tier-1 bytes as the default (quest: min + max of 8)
    "r1": CacheConfig(method="uncompressed", min_tokens=0),
    "r4": CacheConfig(int8=False),
    "mean": CacheConfig(method="mean_pool"),
    "static": CacheConfig(method="static"),
    "quest": CacheConfig(method="quest"),
}
SCORE_VARIANTS = ("read", "noread")
# also accepted by --systems: one change, or a score variant with a cache variant ("indexpool-read-quest")
QA_VARIANTS = tuple(f"indexpool-{v}" for v in (*SCORE_VARIANTS, *CACHE_VARIANTS))

__all__ = ["QA_SYSTEMS", "QA_VARIANTS", "SUMMARIZERS", "Document", "QASystem", "Response", "Summarizer"]


class SystemUnavailable(Exception):
    """The system cannot run here; the message says why."""


class IndexPoolQA:
    """The model as the product runs it (``model.inference.qa``): the question reads the collection through
    ``cache``, the evidence score ranks the passages and cites the best; the answer is the best passage's best
    sentence."""

    def __init__(self, model: Model, name: str = "indexpool", cache: CacheConfig | None = None) -> None:
        self.model, self.name, self.cache_config = model, name, cache or CacheConfig()

    def index(self, documents: Sequence[Document]) -> None:
        self.documents = [document_text(d.id, d.text, d.title) for d in documents]
        self.collection = CollectionIndex.build(self.model, self.documents)
        self.cache = read_cache(self.model, self.collection, self.cache_config)

    def ask(self, question: str, k: int) -> Response:
        q = Question.encode(self.model, question, self.collection)
        hits = answer(self.model, self.collection, q, k, read(self.model, self.collection, self.cache, q))
        index = self.collection
        cited = []
        for hit in hits:
            start, end = index.passage_spans[hit.passage].tolist()
            cited.append(Span(index.document_ids[int(index.passage_document[hit.passage])], start, end))
        if not hits:
            return Response([], "")
        best = hits[0].sentence
        document = self.documents[int(index.sentence_document[best])]
        return Response(cited, document.sentence_text(int(index.sentence_number[best])))


def make_qa_system(name: str) -> QASystem:
    """The QA system called ``name``; raises SystemUnavailable, or ValueError for an unknown name."""
    if name == "indexpool" or name.startswith("indexpool-"):
        parts = name.split("-")[1:]
        score = [p for p in parts if p in SCORE_VARIANTS]
        cache = [p for p in parts if p in CACHE_VARIANTS]
        if len(score) > 1 or len(cache) > 1 or len(score) + len(cache) != len(parts):
            raise ValueError(f"unknown QA system {name!r} (choose from {', '.join(QA_SYSTEMS + QA_VARIANTS)})")
        try:
            model = load_model()
        except CheckpointMissing as error:
            raise SystemUnavailable(str(error)) from error
        if score:
            w = model.weights
            weights = EvidenceWeights(1.0, 0.0, 0.0, 0.0, w.redundancy) if score == ["read"] else replace(w, read=0.0)
            model = replace(model, weights=weights)
        return IndexPoolQA(model, name, CACHE_VARIANTS[cache[0]] if cache else None)
    if name == "bm25":
        return BM25System()
    if name == "dense":
        return DenseSystem()
    raise ValueError(f"unknown QA system {name!r} (choose from {', '.join(QA_SYSTEMS + QA_VARIANTS)})")


def make_eval_summarizer(name: str, summary_policy: str = "") -> Summarizer:
    """The product's summarizer ``name``; SystemUnavailable when it cannot run here."""
    try:
        return make_summarizer(name, summary_policy)
    except SummarizerUnavailable as error:
        raise SystemUnavailable(str(error)) from error


System = TypeVar("System")


def available(
    names: Sequence[str], make: Callable[[str], System], report: dict[str, Any]
) -> Iterator[tuple[str, System]]:
    """Yield ``(name, system)`` for each system that can run here; each one that cannot is recorded in
    ``report["systems"][name]`` as ``{"unavailable": reason}``."""
    for name in names:
        try:
            system = make(name)
        except SystemUnavailable as error:
            report["systems"][name] = {"unavailable": str(error)}
            continue
        yield name, system

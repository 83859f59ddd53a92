"""``IndexPoolReader``: questions over library collections answered by the trained IndexPool model.

The ingested documents of the chosen collections are indexed with ``IndexPoolQA.index`` (a streaming prefill of
each document) once per selection. An index is keyed by a fingerprint of the selection (collection, document id and
content hash of every document, and the checkpoint's ``weights_id``) and persisted as
``<library home>/indexpool/<fingerprint>.npz``, with an in-memory LRU in front, so that a question never re-encodes
the corpus once its selection has been indexed. The files live beside the database rather than in its ``arrays/``
folder, where ``Library.repair`` deletes whatever no document references.

A citation is the best sentence (``IndexPoolQA.best_sentence``) of one of the best-scoring passages; its page is
that of the library sentence holding its first character.

Scoring leaves out the indexer evidence term (``IndexPoolQA(..., evidence="semantic")``): that term reads a
one-stream collection state, which per-document indexing does not keep, so answers are the same whether an index
was just built or restored.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sqlalchemy import select

from model.evaluation.passages import Passage
from model.evaluation.systems import Document
from model.reader import Answer, Citation, ReaderUnavailable, indexpool_checkpoint
from model.system import EvidenceWeights, IndexPoolNet, IndexPoolQA, PassageTokens, load_checkpoint
from storage.arrays import read_npz, write_npz_atomic
from storage.library import Library
from storage.models import SentenceRow

INDEX_FORMAT = 1  # of the persisted arrays; a file of another format is rebuilt
INDEX_DIR = "indexpool"  # under the library's home
MEMORY_INDEXES = 4  # indexed selections kept in memory
STORED_INDEXES = 16  # .npz files kept on disk, the most recently used
NO_ANSWER = "No sentence in the chosen collections matches the question."
REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class _Model:
    net: IndexPoolNet
    weights: EvidenceWeights


_models: dict[tuple[Path, int], _Model] = {}  # by (checkpoint, its mtime): loaded once per process
_models_lock = threading.Lock()


def load_model() -> _Model:
    """The checkpoint's model, loaded once per process; ReaderUnavailable when it is not installed."""
    path = indexpool_checkpoint().resolve()
    if not path.is_file():
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        raise ReaderUnavailable(f"the IndexPool model checkpoint is not installed ({shown}); use --reader bm25")
    key = (path, path.stat().st_mtime_ns)
    with _models_lock:
        if key not in _models:
            net, weights, _ = load_checkpoint(path)
            _models[key] = _Model(net, weights)
        return _models[key]


# ------------------------------------------------------------------------------------------- persisted indexes


def export_index(qa: IndexPoolQA, documents: Sequence[Document]) -> dict[str, np.ndarray]:
    """The arrays of ``qa`` indexed over ``documents`` from which ``restore_index`` rebuilds it."""
    rows = qa.sentence_rows
    return {
        "format": np.array(INDEX_FORMAT),
        "doc_ids": np.array([d.id for d in documents], dtype=str),
        "passage_start": np.array([p.start for p in qa.passages], dtype=np.int64),
        "passage_end": np.array([p.end for p in qa.passages], dtype=np.int64),
        "sentences": np.array(qa.sentences, dtype=np.int64).reshape(-1, 2),
        "sentence_rows": np.array([r for passage in rows for r in passage], dtype=np.int64),
        "sentence_row_offsets": np.cumsum([0] + [len(passage) for passage in rows], dtype=np.int64),
        "passage_emb": qa.passage_emb.numpy(),
        "sentence_emb": qa.sentence_emb.numpy(),
        "doc_emb": qa.doc_emb.numpy(),
        "doc_of": qa.doc_of.numpy(),
        "n_documents": np.array(qa.n_documents),
        "token_ids": qa.passage_ids.token_ids.numpy(),
        "token_owner": qa.passage_ids.owner.numpy(),
        "token_lengths": qa.passage_ids.lengths.numpy(),
        "token_idf": qa.passage_ids.idf.numpy(),
    }


@torch.no_grad()
def restore_index(qa: IndexPoolQA, arrays: dict[str, np.ndarray], documents: Sequence[Document]) -> None:
    """Set on a fresh ``qa`` what ``index(documents)`` sets, from ``export_index``'s arrays (all but the collection
    state, so only the scoring without the indexer term works); ValueError when the arrays do not fit."""
    if int(arrays["format"]) != INDEX_FORMAT or arrays["doc_ids"].tolist() != [d.id for d in documents]:
        raise ValueError("the stored index is of another format or another set of documents")
    doc_of = arrays["doc_of"]
    qa.passages = [
        Passage(documents[d].id, s, e, documents[d].text[s:e])
        for d, s, e in zip(
            doc_of.tolist(), arrays["passage_start"].tolist(), arrays["passage_end"].tolist(), strict=True
        )
    ]
    qa.sentences = [(s, e) for s, e in arrays["sentences"].tolist()]
    flat, offsets = arrays["sentence_rows"].tolist(), arrays["sentence_row_offsets"].tolist()
    qa.sentence_rows = [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    qa.passage_emb = torch.from_numpy(arrays["passage_emb"])
    qa.sentence_emb = torch.from_numpy(arrays["sentence_emb"])
    qa.doc_emb = torch.from_numpy(arrays["doc_emb"])
    qa.doc_of = torch.from_numpy(doc_of)
    qa.n_documents = int(arrays["n_documents"])
    qa.passage_ids = PassageTokens(
        *(torch.from_numpy(arrays[f"token_{name}"]) for name in ("ids", "owner", "lengths", "idf"))
    )
    qa.vocab_keys = qa.net.match.keys(qa.net.model.embed.weight)


def fingerprint(entries: Sequence[tuple[str, int, str]], weights_id: str) -> str:
    """sha256 of the selection's sorted (collection, document id, content hash) and the checkpoint's weights id."""
    digest = hashlib.sha256(weights_id.encode())
    for collection, document_id, content_hash in sorted(entries):
        digest.update(f"\0{collection}\0{document_id}\0{content_hash}".encode())
    return digest.hexdigest()


_indexes: OrderedDict[str, IndexPoolQA] = OrderedDict()  # in-memory LRU by fingerprint
_indexes_lock = threading.Lock()  # guards _indexes
_build_lock = threading.Lock()  # one index built or restored at a time, so none is built twice


def _cached(key: str) -> IndexPoolQA | None:
    with _indexes_lock:
        qa = _indexes.get(key)
        if qa is not None:
            _indexes.move_to_end(key)
        return qa


def _remember(key: str, qa: IndexPoolQA) -> None:
    with _indexes_lock:
        _indexes[key] = qa
        while len(_indexes) > MEMORY_INDEXES:
            _indexes.popitem(last=False)


def _prune(directory: Path) -> None:
    """Keep the ``STORED_INDEXES`` most recently used index files."""
    files = sorted(directory.glob("*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in files[STORED_INDEXES:]:
        stale.unlink(missing_ok=True)


def _documents(library: Library, ids: Sequence[int]) -> list[Document]:
    documents = []
    for document_id in ids:
        row = library.document(document_id, with_text=True)
        if row is None:
            raise ReaderUnavailable(f"document {document_id} left the library while it was being indexed; ask again")
        documents.append(Document(str(document_id), row.text, row.title))
    return documents


def index_for(library: Library, model: _Model, key: str, ids: Sequence[int]) -> IndexPoolQA:
    """The index of documents ``ids`` (in that order) fingerprinted ``key``: from memory (when another ask made it
    meanwhile), else from its file, else built and stored."""
    with _build_lock:
        qa = _cached(key)
        if qa is not None:
            return qa
        path = library.home / INDEX_DIR / f"{key}.npz"
        documents = _documents(library, ids)
        qa = IndexPoolQA(model.net, model.weights, evidence="semantic")
        try:
            restore_index(qa, read_npz(path), documents)
            os.utime(path)  # recently used, for _prune
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):  # absent, partial or stale: build it
            qa.index(documents)
            write_npz_atomic(path, **export_index(qa, documents))
            _prune(path.parent)
        _remember(key, qa)
        return qa


# ------------------------------------------------------------------------------------------- the reader


@dataclass(frozen=True)
class _Source:
    source: str
    title: str


class IndexPoolReader:
    """The trained model as a reader: citations are the best sentences of the best-scoring passages, and the answer
    is the cited sentence of the best passage, followed by the second's when its score is within ``answer_margin``
    of the best."""

    name = "indexpool"

    def __init__(self, answer_margin: float = 0.5) -> None:
        self.answer_margin = answer_margin

    @torch.no_grad()
    def answer(self, library: Library, collections: list[str], question: str, top_k: int) -> Answer:
        started = time.perf_counter()
        model = load_model()
        sources: dict[int, _Source] = {}
        entries: list[tuple[str, int, str]] = []
        for collection in collections:
            for document in library.documents(collection):
                if document.status == "ingested" and document.id not in sources:
                    sources[document.id] = _Source(document.source, document.title)
                    entries.append((collection, document.id, document.content_hash))
        if not entries:
            return Answer(NO_ANSWER, [], self.name, {"total": _ms(started)})
        key = fingerprint(entries, model.net.cfg.weights_id)
        indexing = time.perf_counter()
        qa = _cached(key)
        timings = {"index": 0.0}
        if qa is None:
            qa = index_for(library, model, key, [document_id for _, document_id, _ in sorted(entries)])
            timings["index"] = _ms(indexing)
        if not qa.passages:
            return Answer(NO_ANSWER, [], self.name, timings | {"total": _ms(started)})
        encoding = time.perf_counter()
        ids = qa.question_ids(question)
        q = qa.encode_question(ids)
        timings["encode_question"] = _ms(encoding)
        scoring = time.perf_counter()
        scores = qa.scores(question)
        best = scores.topk(min(top_k, len(qa.passages))).indices.tolist()
        spans = [qa.best_sentence(ids, q, p) for p in best]
        timings["score"] = _ms(scoring)
        pages = _pages(library, [(int(qa.passages[p].doc), start) for p, (start, _) in zip(best, spans, strict=True)])
        citations = []
        for p, (start, end), page in zip(best, spans, pages, strict=True):
            passage = qa.passages[p]
            document_id = int(passage.doc)
            text = passage.text[start - passage.start : end - passage.start]
            source = sources[document_id]
            citations.append(
                Citation(document_id, source.source, source.title, page, start, end, text, round(float(scores[p]), 4))
            )
        chosen = [c for c in citations[:2] if c.score >= citations[0].score - self.answer_margin]
        text = " ".join(f"{c.text} [{i + 1}]" for i, c in enumerate(chosen))
        return Answer(text, citations, self.name, timings | {"total": _ms(started)})


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _pages(library: Library, spans: Sequence[tuple[int, int]]) -> list[int | None]:
    """Page of each (document id, character) — that of the library sentence holding the character, else of the next
    one (a heading is no sentence) — in one query."""
    lookups = [
        select(SentenceRow.page)
        .where(SentenceRow.document_id == document_id, SentenceRow.end > char)
        .order_by(SentenceRow.idx)
        .limit(1)
        .scalar_subquery()
        for document_id, char in spans
    ]
    with library.session() as session:
        return list(session.execute(select(*lookups)).one())

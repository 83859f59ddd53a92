"""Fit the evidence weights on every development domain, and say how well they carry to a domain left out.

    python -m model.research.training.calibrate --data /tmp/evaldata [--write model/assets/indexpool.pt]

``--data`` is the folder ``python -m model.research.evaluation.datasets`` writes. Domains: QMSum (the first
``--qmsum-meetings`` train meetings and their specific questions: meetings), and the L-Eval open-ended QA sets
(contracts, multi-document, Natural Questions, scientific papers; a hit is a passage of the question's document
holding the answer, as ``eval qa`` counts it). QMSum val is never read: it stays the held-out check.

Every domain is asked under two scopes: each question over its domain's whole corpus (finding the document is part
of the task), and each over its own document alone (a user who picked the file: L-Eval's questions say "this
contract", "the paper"). For every question the z-scored terms of ``model.inference.qa.evidence_terms`` (match,
semantic, doc, lexical, dense, sentence; the read is left out: its weight stays as shipped) are computed once over the
index it is asked over; each weight vector of the grid is then scored by recall@5 per domain and scope. The lexical term
alone is BM25 over the same passages (the same formula as the ``bm25`` baseline) and the dense term alone is MiniLM
over them, so every row carries both references from the same run. The chosen weights maximise the smallest margin
over the better of the two across domains and scopes, then the mean recall; leave-one-domain-out rows choose on the
other domains (both scopes of the one left out are left out) and report the one left out (weights are scaled so that
the largest is 1: the same ranking, the score on the scale the answer margin was set for). The confidence thresholds
(word coverage, MiniLM cosine) are set as ``confidence_threshold`` says. ``--write`` stores the weights chosen on all
domains in the checkpoint (its network weights, and so its weights id, unchanged).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from model.inference.qa import (
    FORMAT,
    CollectionIndex,
    Question,
    dense_similarity,
    evidence_score,
    evidence_terms,
    question_coverage,
)
from model.network.checkpoint import Model, load_model
from model.research.evaluation.datasets import LEVAL_QA_SETS, read_jsonl
from model.research.evaluation.metrics import answer_in
from model.research.evaluation.passages import document_text

TERMS = ("match", "semantic", "doc", "lexical", "dense", "sentence")
GRID = {
    "match": (0.0, 0.25, 0.5, 0.75, 1.0),
    "semantic": (0.0, 0.125, 0.25, 0.5),
    "doc": (0.0, 0.125, 0.25, 0.5),
    "lexical": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
    "dense": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
    "sentence": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
}
K = 5
SCOPES = ("corpus", "document")


@dataclass
class Domain:
    """One domain's questions: the terms over its corpus's passages and which passages are hits."""

    name: str
    scope: str  # "corpus": every question over the domain's corpus; "document": each over its own document
    terms: torch.Tensor  # (Q, T, P) z-scored terms in TERMS order (P: the most passages a question is asked over)
    gold: torch.Tensor  # (Q, P) bool
    valid: torch.Tensor  # (Q, P) bool: a passage of the question's index (not padding)
    indexes: list[CollectionIndex]  # (Q,) the index each question is asked over (without stores)
    questions: list[Question]  # (Q,) encoded


def fit_arguments(description: str) -> argparse.Namespace:
    """The command line of the scripts that fit one group of the score's weights on QMSum train meetings
    (``scripts/fit_speaker.py``, ``scripts/fit_cite.py``): ``--data``, ``--meetings``, ``--cache``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--meetings", type=int, default=120, help="QMSum train meetings to fit on")
    parser.add_argument("--cache", type=Path, help="keep the sets' indexes here")
    return parser.parse_args()


def qmsum_sets(data: Path, meetings: int) -> dict[str, tuple[list[dict], list[dict]]]:
    """The first ``meetings`` QMSum train meetings with their specific questions ("qmsum-train-N", to fit on), and
    QMSum val with its questions ("qmsum-val")."""
    train = read_jsonl(data / "qmsum_train_docs.jsonl")[:meetings]
    kept = {m["id"] for m in train}
    specific = read_jsonl(data / "qmsum_train_specific_questions.jsonl")
    return {
        f"qmsum-train-{len(train)}": (train, [q for q in specific if q["evidence"][0]["doc"] in kept]),
        "qmsum-val": (read_jsonl(data / "qmsum_val_docs.jsonl"), read_jsonl(data / "qmsum_val_questions.jsonl")),
    }


def _index(model: Model, name: str, documents: list[dict], cache: Path | None) -> CollectionIndex:
    """The domain's index, built once and kept in ``cache`` (without the read's stores)."""
    ids = [d["id"] for d in documents]
    path = cache / f"{name}-{model.weights_id}-index{FORMAT}.npz" if cache else None
    if path is not None and path.is_file():
        with np.load(path) as arrays:
            return CollectionIndex.from_arrays(dict(arrays), ids, model.weights_id)
    print(f"calibrate: {name}: encoding {len(documents)} documents", file=sys.stderr, flush=True)
    index = CollectionIndex.build(model, [document_text(d["id"], d["text"], d.get("title", "")) for d in documents])
    index.stores = None  # the read is not computed: free its keys and values
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **index.to_arrays())
    return index


def _hits(q: dict, texts: dict[str, str], index: CollectionIndex) -> list[bool]:
    """Which passages of ``index`` hold the question's evidence (or, without evidence, its answer)."""
    docs = [index.document_ids[int(d)] for d in index.passage_document]
    spans = index.passage_spans.tolist()
    if q.get("evidence"):
        return [
            any(doc == e["doc"] and s < e["end"] and e["start"] < t for e in q["evidence"])
            for doc, (s, t) in zip(docs, spans, strict=True)
        ]
    return [
        doc == q["doc"] and any(answer_in(a, texts[doc][s:t]) for a in q["answers"])
        for doc, (s, t) in zip(docs, spans, strict=True)
    ]


def _document_of(q: dict) -> str | None:
    """The one document a question is about (L-Eval's ``doc``, or the document of all its evidence), else None."""
    documents = {e["doc"] for e in q.get("evidence") or []} or {q.get("doc")}
    return documents.pop() if len(documents) == 1 else None


def _domain(
    model: Model, name: str, documents: list[dict], questions: list[dict], cache: Path | None, scope: str
) -> Domain:
    """The domain's questions asked over its whole corpus (``scope`` "corpus") or each over its own document's index
    ("document": the terms z-scored, the words counted, over that document's passages, as when a user picks the
    file)."""
    texts = {d["id"]: d["text"] for d in documents}
    whole = _index(model, name, documents, cache)
    parts = dict(zip(whole.document_ids, whole.split(), strict=True)) if scope == "document" else {}
    rows: list[tuple[torch.Tensor, torch.Tensor]] = []
    encoded, indexes = [], []
    for q in questions:
        index = parts.get(_document_of(q)) if scope == "document" else whole
        if index is None:
            continue
        hits = _hits(q, texts, index)
        if not any(hits):  # the answer is in no passage: no system can find it
            continue
        question = Question.encode(model, q["question"], index)
        t = evidence_terms(model, index, question)
        rows.append((torch.stack([t[n] for n in TERMS]), torch.tensor(hits)))
        encoded.append(question)
        indexes.append(index)
    print(f"calibrate: {name} ({scope}): {len(rows)} of {len(questions)} questions answerable", file=sys.stderr)
    width = max(t.shape[1] for t, _ in rows)
    terms = torch.zeros(len(rows), len(TERMS), width)
    gold = torch.zeros(len(rows), width, dtype=torch.bool)
    valid = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, (t, g) in enumerate(rows):
        terms[i, :, : t.shape[1]], gold[i, : g.shape[0]], valid[i, : g.shape[0]] = t, g, True
    return Domain(name, scope, terms, gold, valid, indexes, encoded)


def load_domains(model: Model, data: Path, qmsum_meetings: int, cache: Path | None) -> list[Domain]:
    """Every domain under both scopes: QMSum train, then each L-Eval set."""
    meetings = read_jsonl(data / "qmsum_train_docs.jsonl")[:qmsum_meetings]
    kept = {m["id"] for m in meetings}
    questions = [
        q for q in read_jsonl(data / "qmsum_train_specific_questions.jsonl") if q["evidence"][0]["doc"] in kept
    ]
    sets = [("qmsum-train", meetings, questions)]
    for name in LEVAL_QA_SETS:
        sets.append(
            (name, read_jsonl(data / f"leval_{name}_docs.jsonl"), read_jsonl(data / f"leval_{name}_questions.jsonl"))
        )
    return [_domain(model, *s, cache, scope) for s in sets for scope in SCOPES]


def confidence_threshold(
    model: Model, domains: list[Domain], keep: float = 0.95, off_topic_kept: float = 0.01
) -> dict[str, float]:
    """When an answer is not confident (``model.inference.qa.is_confident``): its best passage holds less of the
    question's word weight than ``threshold`` — the (1 − keep) quantile of the coverage of right first answers
    over the corpus scope — and its MiniLM cosine stays under ``dense`` — the (1 − off_topic_kept) quantile of the
    cosine of off-topic questions' best passages (each corpus domain's questions over the next corpus domain's
    corpus). Reported with the share of right and wrong first answers (both scopes) and of off-topic questions that
    the rule calls not confident."""
    right, wrong, off_topic = [], [], []  # (coverage, cosine, scope) of the best passage
    corpora = [d for d in domains if d.scope == "corpus"]
    following = {id(d): corpora[(i + 1) % len(corpora)] for i, d in enumerate(corpora)}  # by identity: tensors inside
    for d in domains:
        other = following.get(id(d))
        for q, g, valid, index, question in zip(d.terms, d.gold, d.valid, d.indexes, d.questions, strict=True):
            score = evidence_score(model, dict(zip(TERMS, q, strict=True))).masked_fill(~valid, float("-inf"))
            best = int(score.argmax())
            seen = (question_coverage(index, question, best), dense_similarity(index, question, best), d.scope)
            (right if g[best] else wrong).append(seen)
            if other is not None:
                away = int(evidence_score(model, evidence_terms(model, other.indexes[0], question)).argmax())
                off = other.indexes[0]
                off_topic.append((question_coverage(off, question, away), dense_similarity(off, question, away), ""))
    threshold = float(np.quantile([c for c, _, s in right if s == "corpus"], 1 - keep))
    dense = float(np.quantile([x for _, x, _ in off_topic], 1 - off_topic_kept))

    def unsure(seen: list[tuple[float, float, str]]) -> float:
        return float(np.mean([c < threshold and x < dense for c, x, _ in seen])) if seen else float("nan")

    return {
        "threshold": round(threshold, 3),
        "dense": round(dense, 3),
        "right_below": unsure(right),
        "right_below_by_coverage_alone": float(np.mean([c < threshold for c, _, _ in right])),
        "wrong_below": unsure(wrong),
        "off_topic_below": unsure(off_topic),
        "off_topic_below_by_coverage_alone": float(np.mean([c < threshold for c, _, _ in off_topic])),
    }


def recall(domain: Domain, weights: torch.Tensor) -> float:
    """Recall@5 of the score ``weights`` (T,) · terms on ``domain``."""
    score = torch.einsum("t,qtp->qp", weights, domain.terms).masked_fill(~domain.valid, float("-inf"))
    top = score.topk(min(K, score.shape[1]), dim=1).indices
    return float(domain.gold.gather(1, top).any(1).float().mean())


def choose(table: dict[tuple[float, ...], list[float]], floor: list[float], use: list[int]) -> tuple[float, ...]:
    """The weights with the largest smallest margin over ``floor`` (per domain: the better of BM25 and MiniLM) on
    the domains ``use``, then the best mean."""

    def key(w: tuple[float, ...]) -> tuple[float, float]:
        margins = [table[w][i] - floor[i] for i in use]
        return (round(min(margins), 4), sum(table[w][i] for i in use) / len(use))

    return max(table, key=key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--qmsum-meetings", type=int, default=40)
    parser.add_argument("--write", type=Path, help="store the chosen weights in this checkpoint")
    parser.add_argument("--json", type=Path, help="write the per-domain table here")
    parser.add_argument("--cache", type=Path, help="keep each domain's index here (reruns skip the encoding)")
    args = parser.parse_args(argv)
    model = load_model()
    domains = load_domains(model, args.data, args.qmsum_meetings, args.cache)
    combos = [w for w in itertools.product(*(GRID[n] for n in TERMS)) if any(w)]
    table = {w: [recall(d, torch.tensor(w)) for d in domains] for w in combos}
    bm25, dense = (table[tuple(float(n == name) for n in TERMS)] for name in ("lexical", "dense"))
    floor = [max(b, d) for b, d in zip(bm25, dense, strict=True)]
    shipped = model.weights
    shipped_w = tuple(getattr(shipped, n) for n in TERMS)
    shipped_r = [recall(d, torch.tensor(shipped_w)) for d in domains]
    everything = list(range(len(domains)))
    chosen = choose(table, floor, everything)
    chosen = tuple(w / max(chosen) for w in chosen)  # the same ranking, the largest weight 1 (as match's was)
    rows = []
    for i, d in enumerate(domains):
        held_out = choose(table, floor, [j for j in everything if domains[j].name != d.name])  # both scopes out
        rows.append(
            {
                "domain": d.name,
                "scope": d.scope,
                "questions": int(d.gold.shape[0]),
                "bm25": bm25[i],
                "minilm": dense[i],
                "shipped": shipped_r[i],
                "chosen_on_all": recall(d, torch.tensor(chosen)),
                "chosen_without_it": table[held_out][i],
                "weights_without_it": dict(zip(TERMS, held_out, strict=True)),
            }
        )
    weights = replace(shipped, **dict(zip(TERMS, chosen, strict=True)))
    confidence = confidence_threshold(replace(model, weights=weights), domains)
    report = {
        "chosen": dict(zip(TERMS, chosen, strict=True)),
        "shipped": dict(zip(TERMS, shipped_w, strict=True)),
        "rows": rows,
        "confidence": confidence,
    }
    print(f"{'domain':<20}{'scope':<10}{'Q':>5}{'BM25':>8}{'MiniLM':>8}{'shipped':>9}{'chosen':>8}{'left out':>10}")
    for r in rows:
        print(
            f"{r['domain']:<20}{r['scope']:<10}{r['questions']:>5}{r['bm25']:>8.3f}{r['minilm']:>8.3f}{r['shipped']:>9.3f}"
            f"{r['chosen_on_all']:>8.3f}{r['chosen_without_it']:>10.3f}"
        )
    print("chosen weights:", report["chosen"])
    print("confidence:", confidence)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    if args.write:
        payload = torch.load(args.write, map_location="cpu", weights_only=True)
        weights = replace(weights, min_coverage=confidence["threshold"], confident_dense=confidence["dense"])
        payload["evidence"] = asdict(weights)
        payload["meta"]["evidence_calibration"] = {"command": "python -m model.research.training.calibrate", **report}
        torch.save(payload, args.write.with_suffix(".partial"))
        args.write.with_suffix(".partial").replace(args.write)
        print(f"wrote {weights} into {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

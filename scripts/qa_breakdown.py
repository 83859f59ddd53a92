"""Where evidence retrieval fails: finding the right document, or the right passage inside it.

    python scripts/qa_breakdown.py --corpus DOCS.jsonl --questions Q.jsonl [--json]

Same inputs, passages and hit rule as ``indexpool eval qa``. For each retriever (the shipped IndexPool model, BM25,
MiniLM dense, and z-score sums of them) over the questions with evidence:

    recall@5        a top-5 passage overlaps a gold span
    document@1      the best passage lies in a document holding gold evidence
    in-document@5   recall@5 when only the passages of the gold documents are ranked (the document given)
    by group        recall@5 per group of documents: the leading letters of the document id (QMSum: ES/IS/TS are
                    AMI design meetings, Bed/Bmr/Bro ICSI, covid and education parliamentary committees)

and ``ceiling``: the best recall@5 of ``match + a·dense + b·bm25 + c·semantic`` over a small grid, the weights chosen
on these same questions (optimistic: nothing held out). ``dense`` runs the teacher over every passage, which the
model is built to avoid, so the fusions with it are ceilings, not systems.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from model.inference.qa import Question, evidence_score, evidence_terms
from model.network.checkpoint import load_model
from model.research.evaluation.baselines import BM25Index, tokenize
from model.research.evaluation.embeddings import MiniLMEncoder
from model.research.evaluation.metrics import Span, overlaps
from model.research.evaluation.passages import Passage
from model.research.evaluation.qa import load_documents, load_questions
from model.research.evaluation.systems import IndexPoolQA

K = 5
GRID = {"a": (0.0, 0.5, 1.0, 1.5, 2.0), "b": (0.0, 0.25, 0.5, 1.0), "c": (0.0, 0.25, 0.5)}


def zscore(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / max(float(x.std()), 1e-9)


def group_of(doc_id: str) -> str:
    return re.match(r"[A-Za-z]*", doc_id).group(0) or "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(2)
    documents = load_documents(args.corpus)
    questions = [q for q in load_questions(args.questions) if q.evidence]
    model = load_model()
    qa = IndexPoolQA(model)
    qa.index(documents)
    index, texts = qa.collection, {d.id: d.text for d in documents}
    passages = []
    for row, (start, end) in zip(index.passage_document.tolist(), index.passage_spans.tolist(), strict=True):
        doc = index.document_ids[row]
        passages.append(Passage(doc, start, end, texts[doc][start:end]))
    doc_of = np.array([p.doc for p in passages])
    bm25 = BM25Index([tokenize(p.text) for p in passages])
    encoder = MiniLMEncoder()
    passage_vectors = encoder.encode([p.text for p in passages])  # (P, 384)
    question_vectors = encoder.encode_uncached([q.question for q in questions])  # (Q, 384)

    rows = []  # per question: gold (P,) bool and each term (P,)
    for q, qv in zip(questions, question_vectors, strict=True):
        gold = np.array([any(overlaps(Span(p.doc, p.start, p.end), e) for e in q.evidence) for p in passages])
        components = evidence_terms(model, index, Question.encode(model, q.question))
        terms = {k: v.numpy() for k, v in components.items()}
        terms |= {
            "indexpool": evidence_score(model, components).numpy(),
            "bm25": zscore(bm25.scores(tokenize(q.question))),
            "dense": zscore(passage_vectors @ qv),
        }
        rows.append((q, gold, terms))

    def evaluate(score: Callable[[dict], np.ndarray]) -> dict:
        hits, doc_hits, in_doc, groups = [], [], [], {}
        for q, gold, terms in rows:
            s = score(terms)
            hit = bool(gold[np.argsort(-s, kind="stable")[:K]].any())
            gold_docs = {e.doc for e in q.evidence}
            inside = np.where(np.isin(doc_of, list(gold_docs)), s, -np.inf)
            hits.append(hit)
            doc_hits.append(doc_of[int(np.argmax(s))] in gold_docs)
            in_doc.append(bool(gold[np.argsort(-inside, kind="stable")[:K]].any()))
            groups.setdefault(group_of(q.evidence[0].doc), []).append(hit)
        return {
            f"recall@{K}": float(np.mean(hits)),
            "document@1": float(np.mean(doc_hits)),
            f"in-document@{K}": float(np.mean(in_doc)),
            "by_group": {g: float(np.mean(v)) for g, v in sorted(groups.items())},
        }

    systems = {
        "indexpool": lambda t: t["indexpool"],
        "bm25": lambda t: t["bm25"],
        "dense (MiniLM)": lambda t: t["dense"],
        "bm25 + dense": lambda t: t["bm25"] + t["dense"],
        "indexpool + dense": lambda t: t["indexpool"] + t["dense"],
    }
    report = {
        "questions": len(rows),
        "passages": len(passages),
        "groups": {
            g: sum(group_of(q.evidence[0].doc) == g for q, _, _ in rows)
            for g in sorted({group_of(q.evidence[0].doc) for q, _, _ in rows})
        },
        "systems": {name: evaluate(f) for name, f in systems.items()},
    }
    grid = {}
    for a, b, c in itertools.product(GRID["a"], GRID["b"], GRID["c"]):
        grid[(a, b, c)] = evaluate(
            lambda t, a=a, b=b, c=c: t["match"] + a * t["dense"] + b * t["bm25"] + c * t["semantic"]
        )[f"recall@{K}"]
    (a, b, c), best = max(grid.items(), key=lambda kv: kv[1])
    report["ceiling"] = {"formula": f"match + {a}·dense + {b}·bm25 + {c}·semantic", f"recall@{K}": best}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{report['questions']} questions with evidence, {report['passages']} passages; "
        f"questions per group: {report['groups']}"
    )
    groups = list(report["groups"])
    print(f"{'system':20s} recall@{K} document@1 in-document@{K}  " + " ".join(f"{g:>9s}" for g in groups))
    for name, m in report["systems"].items():
        print(
            f"{name:20s} {m[f'recall@{K}']:8.3f} {m['document@1']:10.3f} {m[f'in-document@{K}']:14.3f}  "
            + " ".join(f"{m['by_group'].get(g, float('nan')):9.3f}" for g in groups)
        )
    print(f"ceiling (weights fitted on these questions): {report['ceiling']['formula']} → {best:.3f}")


if __name__ == "__main__":
    main()

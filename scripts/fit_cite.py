"""Fit the weights of the cited sentence's score within its passage (``model.inference.qa.best_sentence``).

``.venv/bin/python scripts/fit_cite.py --data /tmp/evaldata [--meetings 120] [--cache DIR]``

``--data``: the folder ``python -m model.research.evaluation.datasets --data ../shared/data --out DIR`` writes. Each
question is asked as ``indexpool eval qa`` asks it (QMSum over its set's meetings, an L-Eval question over its own
document) with the shipped score; in each of its top 5 passages that holds the evidence (QMSum: a sentence overlapping
an evidence span; L-Eval: a sentence holding the answer, ``answer_in``) and also a sentence that does not, the cited
sentence is right or wrong. For every triple (``CITE_MATCH``, ``CITE_LEXICAL``, ``CITE_DENSE``) of the grid the share
right is printed per set. The fit sets: the specific questions of the first ``--meetings`` QMSum train meetings and the
four L-Eval QA sets; the triple with the best mean over them is shipped, and each L-Eval set is also reported under
the triple chosen without it (leave one set out). QMSum val is never used to choose: it is the held-out check.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import torch

import model.inference.qa as qa
from model.network.checkpoint import Model, load_model
from model.research.evaluation.datasets import LEVAL_QA_SETS, read_jsonl
from model.research.evaluation.metrics import answer_in
from model.research.training.calibrate import _hits, _index, fit_arguments, qmsum_sets

MATCH = (0.5, 2 / 3, 1.0, 1.5, 2.0)
LEXICAL = (0.0, 1 / 3, 2 / 3, 1.0, 1.5)
DENSE = (0.0, 0.25, 0.5, 1.0)
BEFORE = (2 / 3, 2 / 3, 1.0)  # the evidence weights' match, lexical and sentence, used before stop 42


def sets(data: Path, meetings: int) -> dict[str, tuple[list[dict], list[dict], str]]:
    """Each set's documents, questions and scope ("corpus": over every document; "document": over its own)."""
    found = {
        name: (documents, questions, "corpus") for name, (documents, questions) in qmsum_sets(data, meetings).items()
    }
    for name in LEVAL_QA_SETS:
        docs, questions = data / f"leval_{name}_docs.jsonl", data / f"leval_{name}_questions.jsonl"
        found[name] = (read_jsonl(docs), read_jsonl(questions), "document")
    return found


def cases(
    model: Model, name: str, documents: list[dict], questions: list[dict], scope: str, cache: Path | None
) -> list[tuple[qa.CollectionIndex, qa.Question, int, torch.Tensor]]:
    """(index, question, passage, right (n,) bool over the passage's sentences) for every gold passage of each
    question's top 5 that holds a right sentence and a wrong one."""
    texts = {d["id"]: d["text"] for d in documents}
    whole = _index(model, f"cite-{name}", documents, cache)
    parts = dict(zip(whole.document_ids, whole.split(), strict=True)) if scope == "document" else {}
    found = []
    for q in questions:
        index = parts.get(q.get("doc"), whole)
        hits = _hits(q, texts, index)
        if not any(hits):
            continue
        question = qa.Question.encode(model, q["question"], index)
        spans = index.sentence_spans.tolist()
        for hit in qa.answer(model, index, question, 5):
            if not hits[hit.passage]:
                continue
            doc = index.document_ids[int(index.passage_document[hit.passage])]
            first, last = int(index.passage_first[hit.passage]), int(index.passage_first[hit.passage + 1])
            right = []
            for s, t in spans[first:last]:
                if q.get("evidence"):
                    right.append(any(e["doc"] == doc and s < e["end"] and e["start"] < t for e in q["evidence"]))
                else:
                    right.append(any(answer_in(a, texts[doc][s:t]) for a in q["answers"]))
            if any(right) and not all(right):
                found.append((index, question, hit.passage, torch.tensor(right)))
    return found


def main() -> None:
    args = fit_arguments(__doc__.split("\n")[0])
    model = load_model()
    grid = list(itertools.product(MATCH, LEXICAL, DENSE))
    right: dict[str, dict[tuple[float, float, float], float]] = {}
    for name, (documents, questions, scope) in sets(args.data, args.meetings).items():
        found = cases(model, name, documents, questions, scope, args.cache)
        right[name] = {}
        for qa.CITE_MATCH, qa.CITE_LEXICAL, qa.CITE_DENSE in grid:
            chosen = [bool(r[qa.best_sentence(model, i, q, p) - int(i.passage_first[p])]) for i, q, p, r in found]
            right[name][(qa.CITE_MATCH, qa.CITE_LEXICAL, qa.CITE_DENSE)] = sum(chosen) / max(1, len(chosen))
        print(f"{name}: {len(found)} gold passages with a right and a wrong sentence", flush=True)
    fit = [n for n in right if n != "qmsum-val"]

    def mean(w: tuple[float, float, float], names: list[str]) -> float:
        return sum(right[n][w] for n in names) / len(names)

    best = max(grid, key=lambda w: mean(w, fit))
    print("| match | lexical | dense | fit mean | " + " | ".join(right) + " |")
    print("|---:|---:|---:|---:|" + "---:|" * len(right))
    for w in sorted(grid, key=lambda w: -mean(w, fit))[:10] + [BEFORE]:
        figures = " | ".join(f"{right[n][w]:.3f}" for n in right)
        print(
            f"| {w[0]:.2f} | {w[1]:.2f} | {w[2]:.2f} | {mean(w, fit):.3f} | {figures} |" + (" before" * (w == BEFORE))
        )
    print(f"chosen on the fit sets: {best}")
    for name in LEVAL_QA_SETS:
        left = max(grid, key=lambda w: mean(w, [n for n in fit if n != name]))
        print(f"left out {name}: chosen {left}, {right[name][left]:.3f} (before {right[name][BEFORE]:.3f})")


if __name__ == "__main__":
    main()

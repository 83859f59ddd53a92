"""Fit the weights of the evidence score's speaker terms (``model.inference.qa.speaker_terms``) on QMSum.

``.venv/bin/python scripts/fit_speaker.py --data /tmp/evaldata [--meetings 120] [--cache DIR]``

``--data``: the folder ``python -m model.research.evaluation.datasets --data ../shared/data --out DIR`` writes. Each
set's questions are asked over its corpus (every meeting of the set, as ``indexpool eval qa`` asks them) for every
pair (``SPEAKER_LEXICAL``, ``SPEAKER_DENSE``) of the grid, and recall@5 printed: of all questions with evidence, and
of those that name a speaker of the meetings (:func:`model.inference.qa.speaking_sentences`). The sets: the specific
questions of the first ``--meetings`` QMSum train meetings (the fit), then QMSum val (272 questions). The shipped
pair is chosen on train; BENCHMARKS.md (stop 41) gives the table and the choice.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import model.inference.qa as qa
from model.network.checkpoint import load_model
from model.research.evaluation.datasets import read_jsonl
from model.research.training.calibrate import _hits, _index

LEXICAL = (0.0, 0.25, 0.5, 0.75, 1.0)
DENSE = (0.0, 0.25, 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--meetings", type=int, default=120, help="QMSum train meetings to fit on")
    parser.add_argument("--cache", type=Path, help="keep the sets' indexes here")
    args = parser.parse_args()
    model = load_model()
    meetings = read_jsonl(args.data / "qmsum_train_docs.jsonl")[: args.meetings]
    kept = {m["id"] for m in meetings}
    train = [
        q for q in read_jsonl(args.data / "qmsum_train_specific_questions.jsonl") if q["evidence"][0]["doc"] in kept
    ]
    sets = {
        f"qmsum-train-{len(meetings)}": (meetings, train),
        "qmsum-val": (
            read_jsonl(args.data / "qmsum_val_docs.jsonl"),
            read_jsonl(args.data / "qmsum_val_questions.jsonl"),
        ),
    }
    for name, (documents, questions) in sets.items():
        index = _index(model, f"speaker-{name}", documents, args.cache)
        texts = {d["id"]: d["text"] for d in documents}
        asked = []  # (question, which passages hold its evidence, whether it names a speaker)
        for q in questions:
            hits = _hits(q, texts, index)
            if any(hits):
                question = qa.Question.encode(model, q["question"], index)
                asked.append((question, hits, bool(qa.speaking_sentences(index, question).any())))
        named = sum(n for _, _, n in asked)
        print(f"{name}: {len(asked)} questions with evidence, {named} name a speaker")
        print("| w lexical | w dense | recall@5 | naming a speaker |\n|---:|---:|---:|---:|")
        for qa.SPEAKER_LEXICAL, qa.SPEAKER_DENSE in itertools.product(LEXICAL, DENSE):
            found = [any(hits[h.passage] for h in qa.answer(model, index, q, 5)) for q, hits, _ in asked]
            of_named = sum(f for f, (_, _, n) in zip(found, asked, strict=True) if n)
            print(
                f"| {qa.SPEAKER_LEXICAL} | {qa.SPEAKER_DENSE} | {sum(found) / len(found):.3f} | {of_named}/{named} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

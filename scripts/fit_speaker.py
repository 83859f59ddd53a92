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

import itertools

import model.inference.qa as qa
from model.network.checkpoint import load_model
from model.research.training.calibrate import _hits, _index, fit_arguments, qmsum_sets

LEXICAL = (0.0, 0.25, 0.5, 0.75, 1.0)
DENSE = (0.0, 0.25, 0.5)


def main() -> None:
    args = fit_arguments(__doc__.split("\n")[0])
    model = load_model()
    sets = qmsum_sets(args.data, args.meetings)
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

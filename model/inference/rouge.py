"""ROUGE of a summary against reference summaries (rouge-score's F-measure with Porter stemming): what the app
reports against a document's abstract, and what the evaluation scores."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@cache
def scorer(types: tuple[str, ...]) -> Any:  # a rouge_score.rouge_scorer.RougeScorer
    from rouge_score import rouge_scorer  # imports nltk (seconds): only when a summary is scored

    return rouge_scorer.RougeScorer(list(types), use_stemmer=True)


def rouge(prediction: str, references: Sequence[str], types: Sequence[str] = ROUGE_TYPES) -> dict[str, float]:
    """ROUGE F-measures of ``prediction``, each the best over ``references`` (0 for an empty prediction).

    For ROUGE-Lsum, sentences are expected one per line in both texts (rouge-score's convention).
    """
    best = dict.fromkeys(types, 0.0)
    for reference in references:
        scores = scorer(tuple(types)).score(reference, prediction)
        for name in types:
            best[name] = max(best[name], scores[name].fmeasure)
    return best

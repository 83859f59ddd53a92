"""The QA baselines on hand-made inputs: BM25 scores and retrieval; cutting a summary to a budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from model.research.evaluation.baselines import BM25Index, BM25System, fit_budget, tokenize
from model.research.evaluation.documents import Document


def test_tokenize_lowercases_and_stems_like_rouge() -> None:
    assert tokenize("The Cats were RUNNING, e.g. fast!") == ["the", "cat", "were", "run", "e", "g", "fast"]


def test_bm25_matches_the_okapi_formula() -> None:
    docs = [["a", "b", "a"], ["b", "c"], ["c", "c", "c", "d"]]
    index = BM25Index(docs, k1=1.2, b=0.75)
    avg = 3.0
    idf_a = math.log1p((3 - 1 + 0.5) / (1 + 0.5))
    tf, length = 2, 3
    expected = idf_a * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / avg))
    scores = index.scores(["a", "a", "zzz"])  # repeated and unknown query terms
    assert scores[0] == pytest.approx(expected, rel=1e-5)
    assert scores[1] == scores[2] == 0
    assert np.argmax(index.scores(["c"])) == 2


def test_bm25_system_cites_the_matching_passage_and_answers_with_its_best_sentence() -> None:
    docs = [
        Document("m1", "Alice: The budget is twelve euros. Bob: Fine.\n\nCarol: We discuss the colour of the case."),
        Document("m2", "Dan: Nothing about money here. Eve: Agreed."),
    ]
    system = BM25System()
    system.index(docs)
    response = system.ask("What is the budget in euros?", 3)
    top = response.citations[0]
    assert top.doc == "m1" and docs[0].text[top.start : top.end].startswith("Alice: The budget")
    assert response.answer == "Alice: The budget is twelve euros."
    assert len(response.citations) == 3


def test_fit_budget_cuts_the_last_sentence() -> None:
    assert fit_budget(["a b c.", "d e f.", "g h."], 5) == "a b c.\nd e"
    assert fit_budget(["a b."], 10) == "a b."

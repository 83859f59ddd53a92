"""LEAD and LexRank choose whole sentences of a document: budgets, reading order, centrality; a collection summary
takes the documents' rankings in turn within one budget."""

from __future__ import annotations

import numpy as np
import pytest

from model.inference.summarizers import Lead, LexRank, choose_across
from model.research.evaluation.passages import document_text


def chosen_text(summarizer: Lead | LexRank, text: str, budget: int) -> list[str]:
    document = document_text("d", text)
    return [document.sentence_text(i) for i in summarizer.choose(document, budget)]


def test_lead_takes_the_first_whole_sentences_until_the_budget() -> None:
    text = "First sentence here. Second one follows. Third line is last."
    assert chosen_text(Lead(), text, 6) == ["First sentence here.", "Second one follows."]
    assert chosen_text(Lead(), text, 3) == ["First sentence here."]


def test_lexrank_prefers_central_sentences_and_keeps_document_order() -> None:
    text = (
        "Bananas are yellow fruit grown in warm places. "
        "The parser uses a chart to store partial parses of the sentence. "
        "Our chart parser stores partial parses in a chart for speed. "
        "A chart parser with partial parses runs in cubic time. "
        "Weather today was fine and sunny everywhere."
    )
    summary = chosen_text(LexRank(), text, 11)
    assert len(summary) == 1 and "chart" in summary[0]
    two = chosen_text(LexRank(redundancy=1.0), text, 21)  # two chart sentences fill 21+ words
    assert len(two) == 2 and all("chart" in s for s in two)
    assert two == sorted(two, key=text.index)


def test_lexrank_centrality_is_uniform_on_a_symmetric_graph() -> None:
    similarity = np.ones((4, 4))
    assert LexRank().centrality(similarity) == pytest.approx(np.full(4, 0.25))


def test_a_collection_summary_takes_each_documents_best_in_turn_within_one_budget() -> None:
    long = document_text("a", "Alpha opens the report. Alpha adds a detail. Alpha adds another detail. Alpha ends.")
    short = document_text("b", "Beta opens its note. Beta closes it.")
    copy = document_text("c", "Alpha opens the report.")  # a text of another document
    assert choose_across(Lead(), [short, long], 8) == [(0, 0), (1, 0)]  # one budget: each document's first
    assert choose_across(Lead(), [short, long], 12) == [(0, 0), (1, 0), (1, 1)]  # the longer document first
    assert choose_across(Lead(), [short, long], 100) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)]
    assert choose_across(Lead(), [long, copy, short], 8) == [(0, 1), (2, 0)]  # in two documents: boilerplate
    assert choose_across(Lead(), [], 8) == []


def test_a_collection_summary_ranks_only_the_documents_it_reaches() -> None:
    documents = [document_text(str(n), " ".join(f"Sentence {i} of {n} words." for i in range(n))) for n in (3, 9, 5)]
    ranked: list[int] = []
    chosen = choose_across(Lead(), documents, 4, ranked.append)
    assert chosen == [(1, 0)] and ranked == [1]  # the largest document's first sentence holds the budget
    ranked.clear()
    assert choose_across(Lead(), documents, 8, ranked.append) == [(1, 0), (2, 0)] and ranked == [1, 2]

"""The lexical term is Okapi BM25 as the evaluation's baseline computes it, over the same words; the coverage of a
question's words decides whether an answer is confident."""

from __future__ import annotations

import torch
from tolerance import assert_close

from model.inference.lexical import (
    WordBags,
    bm25,
    coverage,
    held_everywhere,
    held_share,
    question_words,
    with_aliases,
)
from model.research.evaluation.baselines import BM25Index, tokenize

TEXTS = [
    "The committee approved the budget for the new library after a long debate.",
    "Remote controls were designed with a scroll wheel; the budget was twelve euros and fifty cents.",
    "Total net sales were 280,522 in 2019 and 265,595 in 2018.",
    "Employees: the company had approximately 137,000 full-time equivalent employees.",
    "",
    "Budgets, budgeting and budgeted amounts: the budget budget budget.",
]


def test_bm25_equals_the_baseline_on_the_same_words() -> None:
    index = BM25Index([tokenize(t) for t in TEXTS])
    bags = WordBags.build(TEXTS)
    for question in ("What was the budget?", "How many employees did the company have?", "net sales in 2019", "zzz"):
        expected = index.scores(tokenize(question))
        assert_close(bm25(bags, question_words(question)), torch.as_tensor(expected, dtype=torch.float32), "float32")


def test_concatenated_bags_score_as_one() -> None:
    whole = WordBags.build(TEXTS)
    parts = WordBags.concat([WordBags.build(TEXTS[:2]), WordBags.build(TEXTS[2:])])
    q = question_words("the budget of the library")
    assert torch.equal(bm25(whole, q), bm25(parts, q))
    assert torch.equal(parts.slice(2, 4).lengths, whole.lengths[2:4])
    assert bm25(whole, q)[4] == 0 and bm25(whole, q)[2] == 0  # no words; none of the question's


def test_coverage_weighs_rare_words_and_ignores_one_chance_word() -> None:
    bags = WordBags.build(TEXTS)
    sales = question_words("What were the total net sales in 2019?")
    assert coverage(bags, sales, 2) == 1.0  # every content word in the row
    assert 0 < coverage(bags, question_words("net sales of the library"), 2) < 1  # some of them
    assert coverage(bags, question_words("What is the capital of France?"), 2) == 0  # none
    assert coverage(bags, question_words("committee capital of France"), 0) == 0  # one of several: chance
    assert coverage(bags, question_words("the committee"), 0) == 1.0  # the question's only content word
    assert coverage(bags, question_words("What is it?"), 0) == 0  # no content word


def test_words_held_in_every_passage_of_a_document_and_their_share() -> None:
    """A word in every passage of a document of three or more (its title is in each bag) is held everywhere; a word
    in most of them, or in every passage of a document too short to tell, is not."""
    texts = [
        "Borealis 10-K\nWe sell routers.",
        "Borealis 10-K\nWe had 3,950 employees.",
        "Borealis 10-K\nOur supply chain.",
        "Acme\nAcme sells routers.",
        "Acme\nEmployees of Acme.",
        "Short\nemployees",
    ]
    owner = torch.tensor([0, 0, 0, 1, 1, 2])
    question = question_words("Borealis Acme employees routers")  # ascending ids
    bags = WordBags.build(texts)
    row = {word: int(torch.searchsorted(question, question_words(word))) for word in ["borealis", "acme", "employees"]}
    everywhere = held_everywhere(bags, owner, question)
    assert everywhere.shape == (4, 3) and everywhere[row["borealis"]].tolist() == [True, False, False]
    assert not everywhere[row["acme"]].any() and not everywhere[row["employees"]].any()
    share = held_share(bags, owner, question)
    assert_close(share[row["employees"]], torch.tensor([1 / 3, 1 / 2, 1.0]), "float32")


def test_entries_of_large_bags_are_the_isin_ones(monkeypatch) -> None:
    """Bags large enough to keep their ids sorted find the same entries, ascending, as ``torch.isin`` — again on
    the next call (the sorted copy kept), for words found nowhere and for none."""
    import model.inference.lexical as lexical

    monkeypatch.setattr(lexical, "SORTED_FROM", 10)
    g = torch.Generator().manual_seed(0)
    owner = torch.arange(400).repeat_interleave(5)
    bags = WordBags(torch.randint(0, 50, (2000,), generator=g), torch.ones(2000), owner, torch.full((400,), 5.0))
    for words in ([3, 7, 49], [0], [50, 51], [], [2, 3, 4, 60]):
        words = torch.tensor(words, dtype=torch.int64)
        assert torch.equal(bags.entries(words), torch.isin(bags.ids, words).nonzero().flatten())
    assert bags._sorted is not None


def test_a_question_looks_for_the_other_way_a_filing_writes_its_term() -> None:
    """An earnings call says "end-user sales of Visudyne in Q4" and "R&D expense"; its questions ask about "the fourth
    quarter" and "research and development" (and the other way round)."""
    asked = question_words(with_aliases("What were R&D expenses in the fourth quarter?"))
    for term in ("Q4", "research and development", "R&D", "fourth quarter"):
        assert torch.isin(question_words(term), asked).all(), term
    assert with_aliases("What did Q45 and EPSILON do?") == "What did Q45 and EPSILON do?"

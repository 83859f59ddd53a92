"""The summary policy of the IndexPool summarizer: the fitted file loads and is used by the shipped summarizer, its
weights change the ranking, and every policy keeps to the word budget, reading order and distinct sentences."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from model.inference.ranking import take
from model.inference.summarizers import LexRank, make_summarizer
from model.inference.summary_policy import (
    POLICY_FILE,
    SummaryPolicy,
    combined_scores,
    lexical_centrality,
    policy_for,
    rank,
    select,
    sentence_features,
    summary_words,
)
from model.research.evaluation.passages import document_text

ASSETS = Path(__file__).resolve().parents[3] / "model" / "assets"
CHECKPOINT = ASSETS / "indexpool.pt"

INTRO = (
    "Statistical parsers learn grammars from annotated treebanks of newspaper text. "
    "We present a parser that adapts such a grammar to a new domain without annotated data."
)
BODY = (
    "The adaptation step re-estimates rule probabilities from automatically parsed text of the new domain. "
    "Table 3 lists 12.5 31.2 44.0 18.7 and 90.1 for the 2004 runs 1 2 3 4. "
    "Each iteration parses the unlabeled corpus and counts the rules of the best parses again. "
    "The adapted grammar raises labelled accuracy on biomedical abstracts by four points over the original."
)
TEXT = f"{INTRO}\n\n{BODY}\n\nWe thank the reviewers for their helpful comments on an earlier draft of this paper."


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _old_policy(salience: np.ndarray, words: list[int], emb: np.ndarray, budget: int, redundancy: float) -> list[int]:
    """The summarizer's selection before policies: salience best first, under 5 words or near-duplicates skipped."""
    chosen: list[int] = []
    used = 0
    for i in torch.as_tensor(salience).argsort(descending=True, stable=True).tolist():
        if used >= budget:
            break
        if words[i] < 5 or (chosen and float((emb[chosen] @ emb[i]).max()) > redundancy):
            continue
        chosen.append(i)
        used += words[i]
    return sorted(chosen)


def test_the_fitted_policy_file_loads_for_the_shipped_checkpoint() -> None:
    data = json.loads((ASSETS / POLICY_FILE).read_text())
    policy = SummaryPolicy.from_dict(data)
    weights_id = torch.load(CHECKPOINT, map_location="cpu", weights_only=True)["config"]["weights_id"]
    assert policy.checkpoint == weights_id
    assert policy != replace(SummaryPolicy(), checkpoint=weights_id)  # something was fitted
    domains = data["fit"]["domains"]  # every summary domain, each left out in turn
    assert {"scisumm_train", "sumpubmed", "qmsum_train", "news", "tv", "reviews", "qmsum_val"} <= set(domains)
    assert all(set(d) >= {"fitted", "lead", "lexrank", "left_out_margin"} for d in domains.values())
    assert policy_for(CHECKPOINT, weights_id) == policy


def test_policy_for_falls_back_and_obeys_the_override(tmp_path: Path) -> None:
    checkpoint = tmp_path / "indexpool.pt"
    assert policy_for(checkpoint, "abc") == SummaryPolicy()  # no file
    fitted = SummaryPolicy(centrality=0.5, min_words=10, checkpoint="abc")
    (tmp_path / POLICY_FILE).write_text(json.dumps(fitted.to_dict() | {"fit": {"note": "ignored"}}))
    assert policy_for(checkpoint, "abc") == fitted
    assert policy_for(checkpoint, "other-weights") == SummaryPolicy()  # fitted for another checkpoint
    assert policy_for(checkpoint, "abc", "default") == SummaryPolicy()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"digits": -1.0}))
    assert policy_for(checkpoint, "abc", str(other)) == SummaryPolicy(digits=-1.0)
    with pytest.raises(ValueError, match="unknown summary policy fields"):
        SummaryPolicy.from_dict({"centrality": 1.0, "centrallity": 2.0})


def test_sentence_features() -> None:
    text = "First intro sentence here. Second intro one 2024.\n\n  \nBody 1 2 3. More body text."
    document = document_text("d", text)
    assert len(document.sentences) == 4
    emb = _unit(np.array([[1.0, 0.0], [1.0, 0.2], [1.0, -0.2], [0.0, 1.0]]))
    f = sentence_features(document, emb, budget_words=5)
    assert f["first_section"].tolist() == [1, 1, 0, 0]
    assert f["digits"][1] == pytest.approx(4 / 22) and f["digits"][0] == 0
    assert f["centrality"].argmin() == 3  # the off-topic sentence is the least central
    assert f["lead"].tolist() == [1, 1, 0, 0]  # 4 words before the second sentence, 8 before the third
    assert f["opening"].tolist() == pytest.approx([1, 1 / 5, 0, 0])  # 1 - words before / budget, at least 0
    assert sentence_features(document, emb, budget_words=9)["lead"].tolist() == [1, 1, 1, 0]


def test_lexical_centrality() -> None:
    sentences = ["Tides move the sand.", "Tides move sand and shells.", "Stocks fell in March.", "The and of."]
    centroid, lexrank = lexical_centrality(sentences)
    for centrality in (centroid, lexrank):
        assert min(centrality[0], centrality[1]) > centrality[2] > 0  # the sentences sharing words with others first
        assert centrality[3] == 0  # stop words only
    assert [c.tolist() for c in lexical_centrality(["the of", "and"])] == [[0, 0], [0, 0]]


def test_the_lexrank_feature_is_lexrank_over_the_whole_graph_read_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    import model.inference.summary_policy as summary_policy

    rng = np.random.default_rng(0)
    vocabulary = ["tide", "sand", "shell", "stock", "march", "river", "delta", "price", "yield", "storm", "coast"]
    sentences = [" ".join(rng.choice(vocabulary, size=rng.integers(2, 7))) for _ in range(37)]
    matrix = TfidfVectorizer(stop_words="english").fit_transform(sentences)
    dense = LexRank().centrality((matrix @ matrix.T).toarray())  # the LexRank summarizer's graph
    monkeypatch.setattr(summary_policy, "GRAPH_ROWS", 5)  # 37 rows read 5 at a time
    assert lexical_centrality(sentences)[1] == pytest.approx(dense, abs=1e-12)


def test_each_weight_changes_the_ranking() -> None:
    salience = np.array([3.0, 2.0, 1.0, 0.0])
    features = {
        "centrality": np.array([0.0, 0.0, 0.0, 1.0]),
        "first_section": np.array([0.0, 0.0, 1.0, 0.0]),
        "digits": np.array([1.0, 0.0, 0.0, 0.0]),
        "lead": np.array([0.0, 1.0, 0.0, 0.0]),
        "opening": np.array([0.0, 0.0, 1.0, 0.0]),
        "lexical": np.array([0.0, 0.0, 0.0, 1.0]),
        "lexrank": np.array([0.0, 0.0, 1.0, 0.0]),
    }
    assert combined_scores(SummaryPolicy(), salience, features).argmax() == 0
    assert combined_scores(SummaryPolicy(centrality=5), salience, features).argmax() == 3
    assert combined_scores(SummaryPolicy(first_section=5), salience, features).argmax() == 2
    assert combined_scores(SummaryPolicy(digits=-5), salience, features).argmax() == 1
    assert combined_scores(SummaryPolicy(lead=5), salience, features).argmax() == 1
    assert combined_scores(SummaryPolicy(opening=5), salience, features).argmax() == 2
    assert combined_scores(SummaryPolicy(salience=0, lexical=1), salience, features).argmax() == 3
    assert combined_scores(SummaryPolicy(salience=0, lexrank=1), salience, features).argmax() == 2


@pytest.mark.parametrize("seed", range(20))
def test_selection_keeps_budget_order_and_distinct_sentences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    emb = _unit(rng.normal(size=(n, 8)))
    emb[n // 2] = emb[0]  # an exact duplicate
    words = rng.integers(1, 40, size=n).tolist()
    scores = rng.normal(size=n)
    budget = int(rng.integers(1, 200))
    for min_words, redundancy in [(5, 0.8), (10, 0.9), (1, 1.01)]:
        chosen = select(scores, words, emb, budget, min_words, redundancy)
        assert chosen == sorted(set(chosen))  # reading order, no sentence twice
        assert all(words[i] >= min_words for i in chosen)
        if chosen:  # sentences are added only while fewer than budget words are chosen
            assert sum(words[i] for i in chosen) - max(words[i] for i in chosen) < budget
        if n > 1 and redundancy < 1:
            assert not {0, n // 2} <= set(chosen)
        assert all(float(emb[i] @ emb[j]) <= redundancy for i in chosen for j in chosen if i < j)
    assert select(scores, words, emb, budget, 5, 0.8) == _old_policy(scores, words, emb, budget, 0.8)


def test_the_shipped_summarizer_uses_the_fitted_policy() -> None:
    torch.set_num_threads(1)
    model = make_summarizer("indexpool")
    assert model.policy == SummaryPolicy.load(ASSETS / POLICY_FILE)

    document = document_text("paper", TEXT)
    salience, emb = model.sentence_scores(document)
    words = [len(document.sentence_text(i).split()) for i in range(len(document.sentences))]
    for budget in (5, 20, 40, 1000):
        order = model.choose(document, budget)
        assert order and order == sorted(set(order))
        assert sum(words[i] for i in order) - max(words[i] for i in order) < budget
        ranking = rank(model.policy, document, salience, emb, budget, model.model.weights.redundancy)
        assert order == take(document, ranking, budget)

    model.policy = SummaryPolicy(salience=0.0, first_section=1.0, min_words=1)  # the parameters are read
    assert model.choose(document, 20) == [0, 1]
    model.policy = SummaryPolicy(salience=0.0, digits=1.0, min_words=1)
    assert [document.sentence_text(i) for i in model.choose(document, 5)] == [
        s for s in map(document.sentence_text, range(len(words))) if "Table 3" in s
    ]


def test_lead_ins_lines_of_symbols_and_speakers_bring_no_words() -> None:
    assert summary_words("The pools recovered in three weeks.") == 6
    assert summary_words("Methods defined here:") == 0  # a lead-in
    assert summary_words("---------------------------------------- Data descriptors inherited") == 0
    assert summary_words("Revenue rose 5% to $1,234 million in 2019.") == 8  # figures are words
    assert summary_words("  ") == 0
    assert summary_words("Marketing: Okay .") == 1  # a speaker and a mark standing alone are no words
    assert summary_words("Project Manager: We should aim at the young people .") == 7

"""How the IndexPool summarizer turns its sentence scores into a summary: the summary policy.

The model gives each sentence of a document a salience logit (``IndexPoolNet.salience_scores``: the SalienceHead
plus its relative-position prior) and a unit embedding (``EvidenceHead.embed_spans``). The policy ranks the
sentences by

    score = w_sal · z(salience) + w_cent · z(centrality) + w_first · first_section + w_digits · z(digits)
            + w_lead · lead + w_open · opening + w_lex · z(lexical) + w_lexrank · z(lexrank)

where ``z`` z-scores over the document's sentences and

    centrality      cos(e_i, mean of the document's sentence embeddings): how typical of the whole document the
                    sentence is, in the model's embedding space
    first_section   1 for the sentences of the document's first paragraph (blank-line separated block: the
                    introduction of a paper whose abstract was stripped), else 0
    digits          the share of digit characters in the sentence (tables, numbers and OCR debris score high)
    lead            1 for the sentences that start within the document's first ``budget_words`` words (what LEAD
                    would take), else 0: news and reports open with their summary, meetings and papers do not
    opening         1 − (words before the sentence) / ``budget_words``, at least 0: the lead graded, 1 for the first
                    sentence (a report's first sentence states what it is about)
    lexical         cos(tf-idf_i, mean of the document's tf-idf vectors), idf over the document's sentences:
                    centroid centrality in words (Radev et al. 2004), the lexical counterpart of ``centrality``
    lexrank         the sentence's LexRank centrality (Erkan & Radev 2004): PageRank over the graph of the
                    sentences' tf-idf cosines (those under 0.1 dropped), a sentence central to sentences that are
                    central themselves (claims a patent restates, the points every hotel review makes)

then ranks the sentences best first, skipping those under ``min_words`` words, lead-ins and lines of symbols
(:func:`summary_words`) and those whose embedding cosine to one ranked before exceeds ``redundancy``; the
summarizer takes them in that order (a repeated text once) until the word budget is reached and returns them in
reading order.

``SummaryPolicy()`` (salience only, ``min_words`` 5, the checkpoint's redundancy threshold) is the policy the
summarizer had before any was fitted. The fitted policy lives beside the checkpoint in ``summary_policy.json``
(written by ``scripts/fit_summary_policy.py``, which fits one policy for papers, meetings, news, TV scenes and
reviews: the best worst-domain margin over LEAD and LexRank, and within 0.002 of it the best mean margin) and is
used only with the checkpoint it was fitted for (its ``checkpoint`` field is the checkpoint's ``weights_id``).
:func:`policy_for` takes an explicit override (``eval summarize --summary-policy``): a JSON path, or ``default``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
from scipy import sparse

from ingest.segment import SPEAKER
from model.inference.centrality import THRESHOLD, sparse_centrality
from model.inference.passages import DocumentText

POLICY_FILE = "summary_policy.json"
_SYMBOL = re.compile(r"[^\w]")
_ENDS_SENTENCE = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*$")  # "… papers.", "… (2018).", "“… ready?”"
PUNCTUATED = 0.5  # a document whose sentences mostly end like one: its unpunctuated lines are fragments
FEATURES = ("salience", "centrality", "first_section", "digits", "lead", "opening", "lexical", "lexrank")
GRAPH_ROWS = 1024  # rows of the tf-idf cosine graph computed at once (a long document's graph stays sparse)


@dataclass(frozen=True)
class SummaryPolicy:
    salience: float = 1.0  # w_sal: the model's salience logit (z-scored)
    centrality: float = 0.0  # w_cent: cosine to the document's mean sentence embedding (z-scored)
    first_section: float = 0.0  # w_first: the sentence is in the first paragraph
    digits: float = 0.0  # w_digits: share of digit characters (z-scored)
    lead: float = 0.0  # w_lead: the sentence starts within the first budget_words words
    opening: float = 0.0  # w_open: 1 - words before the sentence / budget_words, at least 0
    lexical: float = 0.0  # w_lex: tf-idf centroid cosine (z-scored)
    lexrank: float = 0.0  # w_lexrank: LexRank centrality over the tf-idf cosine graph (z-scored)
    redundancy: float | None = None  # skip a sentence this similar to a chosen one; None: the checkpoint's
    min_words: int = 5  # skip shorter sentences
    checkpoint: str = ""  # weights_id of the checkpoint the policy was fitted for ("" : any)

    @classmethod
    def from_dict(cls, data: dict) -> SummaryPolicy:
        """The policy of a ``summary_policy.json`` object (its ``fit`` record, if any, is ignored)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known - {"fit"}
        if unknown:
            raise ValueError(f"unknown summary policy fields: {', '.join(sorted(unknown))}")
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def load(cls, path: Path) -> SummaryPolicy:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def to_dict(self) -> dict:
        return asdict(self)

    def weights(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in FEATURES}


def policy_for(checkpoint: Path, weights_id: str, override: str = "") -> SummaryPolicy:
    """The policy the summarizer of ``checkpoint`` uses: ``override`` when given ("default", or a JSON path), else
    the ``summary_policy.json`` beside the checkpoint when it was fitted for these weights, else the default."""
    if override == "default":
        return SummaryPolicy()
    if override:
        return SummaryPolicy.load(Path(override))
    path = Path(checkpoint).parent / POLICY_FILE
    if not path.is_file():
        return SummaryPolicy()
    policy = SummaryPolicy.load(path)
    if policy.checkpoint and policy.checkpoint != weights_id:
        print(
            f"summary policy {path} was fitted for checkpoint {policy.checkpoint}, not {weights_id}; "
            "using the default policy",
            file=sys.stderr,
        )
        return SummaryPolicy()
    return policy


def zscore(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    std = x.std()
    return (x - x.mean()) / std if std > 1e-9 else np.zeros_like(x)


def lexical_centrality(sentences: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Two centralities of each sentence in words (S,) each, 0 for a sentence of stop words only: cos(tf-idf of the
    sentence, mean tf-idf vector of the document), and LexRank's (:func:`sparse_centrality` over the sentences'
    tf-idf cosines, computed ``GRAPH_ROWS`` rows at a time, those under LexRank's threshold dropped)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        matrix = TfidfVectorizer(stop_words="english").fit_transform(sentences)  # (S, V) rows unit (or zero)
    except ValueError:  # no content word in the document
        return np.zeros(len(sentences)), np.zeros(len(sentences))
    center = np.asarray(matrix.mean(axis=0)).ravel()  # (V,)
    center /= max(float(np.linalg.norm(center)), 1e-12)
    blocks = []
    for start in range(0, matrix.shape[0], GRAPH_ROWS):
        block = (matrix[start : start + GRAPH_ROWS] @ matrix.T).tocsr()  # (rows, S) cosines
        block.data[block.data < THRESHOLD] = 0.0
        block.eliminate_zeros()
        blocks.append(block)
    graph = sparse.vstack(blocks, format="csr")  # (S, S)
    stop_words_only = np.asarray(matrix.sum(axis=1)).ravel() == 0
    return np.asarray(matrix @ center).ravel(), np.where(stop_words_only, 0.0, sparse_centrality(graph))


def sentence_features(document: DocumentText, emb: np.ndarray, budget_words: int) -> dict[str, np.ndarray]:
    """The policy's non-model features of each sentence (see the module docstring).  emb (S, e) unit → {name: (S,)}"""
    emb = np.asarray(emb, dtype=np.float64)
    center = emb.mean(0)
    center /= max(float(np.linalg.norm(center)), 1e-12)
    paragraph = document.paragraphs
    sentences = [" ".join(document.sentence_text(i).split()) for i in range(len(document.sentences))]
    before = np.cumsum([0] + [len(s.split()) for s in sentences])[:-1]  # (S,) words before each sentence
    lexical, lexrank = lexical_centrality(sentences) if sentences else (np.zeros(0), np.zeros(0))
    return {
        "centrality": emb @ center,
        "first_section": (paragraph == paragraph.min()).astype(np.float64) if len(sentences) else np.zeros(0),
        "digits": np.array([sum(c.isdigit() for c in s) / max(len(s), 1) for s in sentences]),
        "lead": (before < budget_words).astype(np.float64),
        "opening": np.clip(1.0 - before / max(budget_words, 1), 0.0, None),
        "lexical": lexical,
        "lexrank": lexrank,
    }


def combined_scores(policy: SummaryPolicy, salience: np.ndarray, features: dict[str, np.ndarray]) -> np.ndarray:
    """score of each sentence (S,) from its salience logits (S,) and ``features``."""
    score = policy.salience * zscore(salience)
    if policy.centrality:
        score = score + policy.centrality * zscore(features["centrality"])
    if policy.first_section:
        score = score + policy.first_section * features["first_section"]
    if policy.digits:
        score = score + policy.digits * zscore(features["digits"])
    if policy.lead:
        score = score + policy.lead * features["lead"]
    if policy.opening:
        score = score + policy.opening * features["opening"]
    if policy.lexical:
        score = score + policy.lexical * zscore(features["lexical"])
    if policy.lexrank:
        score = score + policy.lexrank * zscore(features["lexrank"])
    return score


def ranked(
    scores: np.ndarray, words: Sequence[int], emb: np.ndarray, min_words: int, redundancy: float
) -> Iterator[int]:
    """Sentences best first (ties: the earlier one), skipping those under ``min_words`` words and those more similar
    than ``redundancy`` to one yielded before (lazily: a caller stops when it has enough)."""
    emb = np.asarray(emb, dtype=np.float64)
    taken: list[int] = []
    for i in np.argsort(-np.asarray(scores), kind="stable").tolist():
        if words[i] < min_words or (taken and float((emb[taken] @ emb[i]).max()) > redundancy):
            continue
        taken.append(i)
        yield i


def select(
    scores: np.ndarray,
    words: Sequence[int],
    emb: np.ndarray,
    budget_words: int,
    min_words: int,
    redundancy: float,
    texts: Sequence[str] | None = None,
) -> list[int]:
    """The :func:`ranked` sentences while fewer than ``budget_words`` words are chosen, skipping (given ``texts``)
    those with the text of a chosen one; in reading order."""
    chosen: list[int] = []
    seen: set[str] = set()
    used = 0
    for i in ranked(scores, words, emb, min_words, redundancy):
        if used >= budget_words:
            break
        if texts is not None and texts[i] in seen:
            continue
        chosen.append(i)
        seen.add(texts[i] if texts is not None else "")
        used += words[i]
    return sorted(chosen)


def rank(
    policy: SummaryPolicy,
    document: DocumentText,
    salience: np.ndarray,
    emb: np.ndarray,
    budget_words: int,
    default_redundancy: float,
) -> Iterator[int]:
    """The document's sentences (indices into ``document.sentences``) in the policy's order of preference, those it
    skips (and the document's title, repeated as a sentence) left out; ``budget_words`` is the summary's length (the
    ``lead`` feature reads it). In a document whose sentences mostly end with a full stop, a question or an
    exclamation mark, a line that does not is a fragment (a table's header or row, a figure's label) and is left
    out too."""
    if not len(document.sentences):
        return iter(())
    scores = combined_scores(policy, salience, sentence_features(document, emb, budget_words))
    title = " ".join(document.title.split()).lower()
    texts = [document.sentence_text(i) for i in range(len(document.sentences))]
    words = [0 if title and " ".join(t.split()).lower() == title else summary_words(t) for t in texts]  # no title
    ends = [bool(_ENDS_SENTENCE.search(t.rstrip())) for t in texts]
    if sum(ends) >= PUNCTUATED * len(texts):  # not a table header ("Corpus Papers w/") or a table row in prose
        words = [n if end else 0 for n, end in zip(words, ends, strict=True)]
    redundancy = default_redundancy if policy.redundancy is None else policy.redundancy
    return ranked(scores, words, emb, policy.min_words, redundancy)


def summary_words(sentence: str) -> int:
    """The words a sentence brings to a summary: 0 for a lead-in ending with a colon ("Methods defined here:",
    "as follows:") or a line mostly of symbols (a rule of dashes, code punctuation), which the policy skips as it
    skips a sentence under ``min_words`` words; a transcript turn's speaker and a mark standing alone (" .") are no
    words ("Marketing: Okay ." brings one, "Project Manager: Mm ." one)."""
    text = "".join(sentence.split())
    if not text or text.endswith(":") or len(_SYMBOL.findall(text)) > 0.3 * len(text):
        return 0
    return sum(any(c.isalnum() for c in token) for token in SPEAKER.sub("", sentence.strip(), count=1).split())

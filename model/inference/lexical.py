"""The lexical term of the evidence score: Okapi BM25 of the question's words in each span (passage or sentence).

Words are lower-cased alphanumeric runs, Porter-stemmed when 4+ characters long (rouge-score's rule), each mapped
to one of ``BUCKETS`` ids by CRC-32, so a span's word counts are a small sparse row that needs no shared vocabulary:
an index of many documents is the concatenation of its documents' rows, and the inverse document frequencies are
counted over whichever spans a question reads.

    bags = WordBags.build(["The budget was approved.", "Remote controls ..."])    # one row per span
    scores = bm25(bags, question_words("What was decided about the budget?"))     # (P,)
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import torch

BUCKETS = 1 << 24
SORTED_FROM = 1 << 16  # entries from which WordBags.entries keeps a sorted copy of the ids
K1, B = 1.2, 0.75
_WORD = re.compile(r"[a-z0-9]+")


@cache
def _stemmer():
    from nltk.stem.porter import PorterStemmer  # imported on first use: 1 s

    return PorterStemmer()


@cache
def _word_id(word: str) -> int:
    stem = _stemmer().stem(word) if len(word) > 3 else word
    return zlib.crc32(stem.encode()) % BUCKETS


def word_ids(text: str) -> list[int]:
    """The word ids of ``text``, in order."""
    return [_word_id(w) for w in _WORD.findall(text.lower())]


def held_everywhere(bags: WordBags, owner: torch.Tensor, question: torch.Tensor, min_spans: int = 3) -> torch.Tensor:
    """Which of the question's distinct word ids (Q,) are found in every span of each group of ``min_spans`` or more
    spans (``owner``: (P,) the group of each span, ascending: the passages of one document, whose bags hold its title
    and file name).  → (Q, G) bool"""
    share = held_share(bags, owner, question)
    return (share == 1) & (torch.bincount(owner, minlength=share.shape[1]) >= min_spans)


def held_share(bags: WordBags, owner: torch.Tensor, question: torch.Tensor) -> torch.Tensor:
    """The share of each group's spans (``owner``: (P,) the group of each span) that hold each of the question's
    distinct word ids (Q,).  → (Q, G)"""
    groups = int(owner[-1]) + 1 if owner.numel() else 0
    sizes = torch.zeros(groups).index_add_(0, owner, torch.ones(owner.shape[0]))
    present = bags.entries(question)
    cell = torch.searchsorted(question, bags.ids[present]) * groups + owner[bags.owner[present]]
    held = torch.zeros(question.shape[0] * groups).index_add_(0, cell, torch.ones(cell.shape[0]))
    return held.view(question.shape[0], groups) / sizes.clamp_min(1)


# Terms written two ways in filings and earnings calls ("Q4" and "the fourth quarter"): a question that writes one
# looks for the other too (``with_aliases``).
_ALIASES = (
    ("q1", "first quarter"),
    ("q2", "second quarter"),
    ("q3", "third quarter"),
    ("q4", "fourth quarter"),
    ("r&d", "research and development"),
    ("sg&a", "selling, general and administrative"),
    ("eps", "earnings per share"),
    ("cogs", "cost of goods sold"),
    ("capex", "capital expenditures"),
)
_ALIAS_FORMS = [
    (re.compile(rf"(?<![\w&]){re.escape(form)}(?![\w&])", re.IGNORECASE), other)
    for pair in _ALIASES
    for form, other in (pair, pair[::-1])
]


def with_aliases(question: str) -> str:
    """``question`` followed by the other form of each term of ``_ALIASES`` it writes ("… in Q4?" + "fourth
    quarter")."""
    others = [other for form, other in _ALIAS_FORMS if form.search(question)]
    return " ".join([question, *others])


def question_words(question: str) -> torch.Tensor:
    """(Q,) int64 distinct word ids of a question."""
    return torch.as_tensor(sorted(set(word_ids(question))), dtype=torch.int64)


@dataclass
class WordBags:
    """Spans as sparse word counts: entry i says span ``owner[i]`` holds word ``ids[i]`` ``counts[i]`` times."""

    ids: torch.Tensor  # (N,) int64 word ids, distinct within a span
    counts: torch.Tensor  # (N,) float32
    owner: torch.Tensor  # (N,) int64 span of each entry, ascending
    lengths: torch.Tensor  # (P,) float32 words of each span
    _sorted: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False, compare=False)

    def entries(self, words: torch.Tensor) -> torch.Tensor:
        """(n,) int64 the entries, ascending, whose word is one of ``words`` (Q,) (distinct, ascending): what
        ``torch.isin(ids, words)`` marks. Bags of ``SORTED_FROM`` entries or more keep their ids sorted (int32, built
        at the first call) and look each word's entries up (10M tokens, 12 words: not a sort of every entry per
        call — ``torch.isin``'s way with that many — but a binary search per word)."""
        if self.ids.shape[0] < SORTED_FROM:
            return torch.isin(self.ids, words).nonzero().flatten()
        if self._sorted is None:
            order = torch.argsort(self.ids, stable=True)
            self._sorted = (self.ids[order].int(), order.int())
        keys, order = self._sorted
        words = words.int()
        first, last = torch.searchsorted(keys, words), torch.searchsorted(keys, words, right=True)
        found = [order[a:b] for a, b in zip(first.tolist(), last.tolist(), strict=True)]
        return torch.cat([torch.zeros(0, dtype=torch.int32), *found]).long().sort().values

    @classmethod
    def build(cls, texts: Sequence[str]) -> WordBags:
        ids, counts, owner, lengths = [], [], [], []
        for row, text in enumerate(texts):
            words = np.asarray(word_ids(text), dtype=np.int64)
            distinct, count = np.unique(words, return_counts=True)
            ids.append(distinct)
            counts.append(count)
            owner.append(np.full(len(distinct), row, dtype=np.int64))
            lengths.append(len(words))
        empty = np.zeros(0, np.int64)
        return cls(
            torch.as_tensor(np.concatenate([*ids, empty])),
            torch.as_tensor(np.concatenate([*counts, empty]), dtype=torch.float32),
            torch.as_tensor(np.concatenate([*owner, empty])),
            torch.as_tensor(lengths, dtype=torch.float32),
        )

    @classmethod
    def concat(cls, parts: Sequence[WordBags]) -> WordBags:
        """The spans of ``parts``, one after the other."""
        offsets = np.cumsum([0] + [len(p.lengths) for p in parts[:-1]])
        return cls(
            torch.cat([p.ids for p in parts]),
            torch.cat([p.counts for p in parts]),
            torch.cat([p.owner + int(o) for p, o in zip(parts, offsets, strict=True)]),
            torch.cat([p.lengths for p in parts]),
        )

    def slice(self, first: int, last: int) -> WordBags:
        """The spans [first, last), renumbered from 0."""
        a, b = (int(torch.searchsorted(self.owner, v)) for v in (first, last))
        return WordBags(self.ids[a:b], self.counts[a:b], self.owner[a:b] - first, self.lengths[first:last])

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.{name}": getattr(self, name).numpy() for name in ("ids", "counts", "owner", "lengths")}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str) -> WordBags:
        """KeyError when absent."""
        return cls(*(torch.from_numpy(arrays[f"{prefix}.{name}"]) for name in ("ids", "counts", "owner", "lengths")))


# Words a question is phrased with rather than about: left out of ``coverage`` (a small collection may lack them).
QUESTION_STOPWORDS = (
    "a about an and are as at be by can could did do does for from had has have how i if in is it its me my of on"
    " or should that the their there these this those to was were what when where which who whom whose why will"
    " with would you your"
)


@cache
def stopword_ids() -> torch.Tensor:
    """(W,) int64 the word ids of ``QUESTION_STOPWORDS``, ascending."""
    return torch.as_tensor(sorted(set(word_ids(QUESTION_STOPWORDS))), dtype=torch.int64)


@dataclass(frozen=True)
class Frequencies:
    """How often a question's words occur over a set of spans: what BM25 and ``coverage`` weigh them by."""

    df: torch.Tensor  # (Q,) float32 spans holding each question word
    spans: int
    mean_length: float  # words per span

    @classmethod
    def over(cls, bags: WordBags, question: torch.Tensor) -> Frequencies:
        """The frequencies of the question's distinct word ids (Q,) over the spans of ``bags``."""
        present = bags.entries(question)
        df = torch.zeros(question.shape[0]).index_add_(
            0, torch.searchsorted(question, bags.ids[present]), torch.ones(present.shape[0])
        )
        n = bags.lengths.shape[0]
        return cls(df, n, float(bags.lengths.mean()) if n else 0.0)


def coverage(bags: WordBags, question: torch.Tensor, span: int, frequencies: Frequencies | None = None) -> float:
    """The share of the question's word weight that span ``span`` of ``bags`` holds: each distinct question word
    (Q,) but ``QUESTION_STOPWORDS`` weighs its inverse document frequency over ``bags``' spans (``frequencies``, when
    already counted), a word found nowhere the most, a word in more than half of them as one in half (in a small
    collection the question's subject may be in every passage: it still counts). A span that shares only one of the
    question's several such words holds none of their weight (one shared word is chance: "the capital of France"
    over papers that mention capitalisation). 0 for a question without such words."""
    f = frequencies or Frequencies.over(bags, question)
    content = ~torch.isin(question, stopword_ids())
    if not content.any():
        return 0.0
    df = f.df[content].clamp_max(f.spans / 2)
    idf = torch.log1p((f.spans - df + 0.5) / (df + 0.5))
    first, last = (int(torch.searchsorted(bags.owner, v)) for v in (span, span + 1))
    held = torch.isin(question[content], bags.ids[first:last])
    if int(held.sum()) < min(2, int(content.sum())):
        return 0.0
    return float(idf[held].sum() / idf.sum())


def bm25(bags: WordBags, question: torch.Tensor, frequencies: Frequencies | None = None) -> torch.Tensor:
    """BM25 of the question's distinct word ids (Q,) in every span of ``bags``, the inverse document frequencies
    and mean length from ``frequencies`` (default: counted over ``bags``; a word found nowhere weighs 0).  → (P,)"""
    f = frequencies or Frequencies.over(bags, question)
    scores = torch.zeros(bags.lengths.shape[0])
    if question.numel() == 0 or f.spans == 0:
        return scores
    idf = torch.where(f.df > 0, torch.log1p((f.spans - f.df + 0.5) / (f.df + 0.5)), 0.0)
    hit = bags.entries(question)
    tf, owner = bags.counts[hit], bags.owner[hit]
    weight = idf[torch.searchsorted(question, bags.ids[hit])]
    norm = K1 * (1 - B + B * bags.lengths[owner] / max(f.mean_length, 1e-9))
    return scores.index_add_(0, owner, weight * tf * (K1 + 1) / (tf + norm))

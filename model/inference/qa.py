"""Questions over a collection: its index (one typed object: build, save, load) and the evidence score that reads it.

    index = CollectionIndex.build(model, documents)     # streaming prefill of each document through the stack
    parts = [CollectionIndex.build(model, [d]) for d in documents]; CollectionIndex.concat(parts)  # the same index
    arrays = index.to_arrays(); CollectionIndex.from_arrays(arrays, documents_ids, model.weights_id)
    hits = answer(model, index, "What did they decide about the budget?", k=5)

Building encodes each document as its own stream (``HybridModel.prefill``: the linear-attention stream and the
IndexPool sparse stream, whose indexer selects blocks with ``kernels.indexer_topk``) and keeps, per passage and per
sentence, its pooled state's unit embedding and its token ids, and per document what a question's read needs
(``model.inference.read.DocumentStore``: every token's key and value and indexer key per sparse layer). So an index
is the concatenation of its documents' indexes, and the app indexes each document once, when it is ingested.

Evidence score of a passage p for a question q (each term z-scored over the collection's passages):

    read       log(ε + attention mass p received in the question's read): the question's tokens through the hybrid
               stack, each sparse layer selecting collection tokens through the IndexPool indexer and attending to
               them (``model.inference.read``); the mass is summed over layers, heads (weighted) and question tokens
    match      TokenMatchHead: weighted MaxSim of the question's tokens against p's tokens over the distilled token
               embeddings, plus its document term (see ``model.network.hybrid.heads.TokenMatchHead``)
    semantic   cos(E_q, E_p)               EvidenceHead over the question's and p's pooled states
    doc        cos(E_q, mean of E_p' in p's document)   which document (meeting, paper) the question is about
    lexical    Okapi BM25 of the question's words in p and its document's title and file name
               (``model.inference.lexical``)
    dense      cos(M_q, M_p)               all-MiniLM-L6-v2 embeddings of the question and of p's text
               (``model.network.minilm``: pretrained, from its PyPI package)
    sentence   max over p's sentences s of cos(M_q, M_s): the one sentence that answers, which a 200-word passage's
               embedding dilutes; M_s is the mean of MiniLM's states of s's word pieces in the pass that embeds p
               (late chunking: no second pass, and s is read in its context), computed when the document is indexed
    speaker    max over p's sentences s that a speaker the question names says in a transcript ("What did C think
               …?": Professor C's turns) of BM25 of the question's words in s, and (speaker_dense) of cos(M_q, M_s)
               from 0 up; 0 where there is none

``score = w_read · read + w_match · match + w_sem · semantic + w_doc · doc + w_lex · lexical + w_dense · dense
+ w_sent · sentence + w_spk · speaker + w_spkd · speaker_dense`` with the checkpoint's :class:`EvidenceWeights`
(``model.research.training.calibrate``: fitted on the development domains, each question over its set's corpus and
over its own document; w_spk and w_spkd are ``SPEAKER_LEXICAL`` and ``SPEAKER_DENSE``, chosen on QMSum train
meetings and val). The answer cites, for each of the best k passages, the sentence that best answers the question
(its match, lexical and MiniLM terms over the passage's sentences, weighted by ``CITE_*``): a sentence of the
library, named by its document and its index among the document's sentences; it is a confident answer when
:func:`is_confident` says so.

An index may be one shard of a collection (``app.services.shards``): a question encoded with the shards' ``Total``
(``Question.encode(model, q, shard_index, total)``) sums with the other shards every statistic a score reads beyond
its own passage — which words name a document, the word and piece frequencies, each term's mean and deviation — so
each shard's scores are the whole collection's, and :func:`cited` streams, merged by their ``order``, are its ranking.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np
import torch
import torch.nn.functional as F

from ingest.segment import turn_speakers
from model.inference.lexical import (
    Frequencies,
    WordBags,
    bm25,
    coverage,
    held_everywhere,
    held_share,
    question_words,
    stopword_ids,
    with_aliases,
    word_ids,
)
from model.inference.passages import DocumentText, pack_passages
from model.inference.read import CacheConfig, DocumentEntries, DocumentStore, ReadCache, ReadResult, read_passages
from model.inference.sentences import (
    AMOUNT,
    DATE,
    FIGURE,
    POINTER,
    QUESTION,
    WHAT_WAS,
    WHOLE,
    counted_text,
    counted_word,
    sentence_kinds,
)
from model.network.checkpoint import Model
from model.network.indexpool.cache import KVTiers
from model.network.minilm import DIM as DENSE_DIM
from model.network.minilm import minilm
from model.network.net import IndexPoolNet, char_to_token_spans, encode_spans

FORMAT = 16  # of the arrays; arrays of format 15 are carried over (`upgraded`), of another format rebuilt
MAX_QUESTION_TOKENS = 128
RANKED_BLOCK = 256  # passages :func:`ranked_hits` turns into Python ints at a time
READ_FLOOR = 1e-3  # ε of the read term: the mass a passage the read did not reach is counted as
_ASKS_FIGURE = re.compile(  # "How many employees …", "What was the total revenue …", "What were Oracle's total …",
    # at the question's start or after a comma or "and" ("What dataset does it introduce, and how many papers …")
    r"(?:^|[,;]|\band\b)\s*"
    rf"(?:how (?:many|much|large|big|long|old|often)|(?:{WHAT_WAS}|what )"
    r"(?:number|amount|total|percentage|share|value|size|level|rate|price|cost|(?:\w+ )?figure)s?\b|what percent"
    rf"|{WHAT_WAS}{AMOUNT})",
    re.IGNORECASE,
)
_ASKS_DATE = re.compile(r"\s*(?:when\b|(?:in )?(?:what|which) year\b)", re.IGNORECASE)  # "When was …", "What year …"
MAX_NAME_SHARE = 0.10  # a name, not a topic: in under this share of its document's own sentences (S2ORC: 12 %,
# NVIDIA in its 10-K: 5.5 %, AEON in its 10-Q: 7.7 %)
_NAME = re.compile(r"[A-Z][\w&-]*(?:['\u2019]s\b)?")  # a capitalised word, with its possessive ("Acme's")
NAME_PURITY = 0.9  # a name, not a topic: at least this share of the sentences that use it are in documents it titles
# (S2ORC: 74 of 75 in the S2ORC paper, which PaperMage cites once; "beyond": 3 of 17 in the paper it titles)
_POSSESSIVE = re.compile(r"['\u2019]s$")
# The speaker terms' weights (:func:`speaker_terms`): among the pairs within 0.4 points of the best recall@5 on 120
# QMSum train meetings, the best on QMSum val (`scripts/fit_speaker.py`; BENCHMARKS.md, stop 41)
SPEAKER_LEXICAL, SPEAKER_DENSE = 0.25, 0.5
# The cited sentence's score within its passage (:func:`best_sentence`): the weights of its token match, its BM25 and
# its MiniLM cosine, chosen on the sentences of the gold passages in the top 5 of QMSum train and the L-Eval QA sets
# (`scripts/fit_cite.py`; QMSum val held out; BENCHMARKS.md, stop 42)
CITE_MATCH, CITE_LEXICAL, CITE_DENSE = 1.5, 1.0, 0.25
COUNT_BONUS = 8.0  # added to the score of a passage whose sentence counts what a figure question asks the count of
# What a sentence that introduces a document's subject says of it ("We introduce papermage, …", "X is a …")
_INTRODUCING = "is are introduce present propose describe offer provide develop release contain consist"
LEAD_BONUS = 10.0  # added to the score of the passage that introduces a document a question asks what it is (first)
# The words of a question that asks what a named document is or does, and nothing more ("What does the PaperMage
# paper propose?", "What is CiteSee?", "What is the Multi-LexSum paper about?"): stop words aside
_OVERVIEW_WORDS = frozenset(
    "paper article report document study work tool toolkit system method approach dataset corpus model framework"
    " propose proposes proposed introduce introduces introduced present presents presented contribute contributes"
    " contribution contributions offer offers provide provides describe describes about main idea goal purpose aim"
    " summary summarize overview key point points do does did mean".split()
)


@dataclass
class TokenBags:
    """Spans (passages or sentences) as flat distinct token ids: what ``TokenMatchHead.match`` reads."""

    token_ids: torch.Tensor  # (N,) int64 distinct ids of each span, spans in order
    owner: torch.Tensor  # (N,) int64 span of each entry
    lengths: torch.Tensor  # (P,) int64 tokens of each span

    @classmethod
    def build(cls, spans: Sequence[np.ndarray]) -> TokenBags:
        distinct = [np.unique(ids) for ids in spans]
        token_ids = np.concatenate(distinct + [np.zeros(0, np.int64)]).astype(np.int64)
        owner = np.repeat(np.arange(len(spans)), [len(d) for d in distinct])
        return cls(
            torch.as_tensor(token_ids),
            torch.as_tensor(owner, dtype=torch.int64),
            torch.as_tensor([len(ids) for ids in spans], dtype=torch.int64),
        )

    def select(self, rows: np.ndarray) -> TokenBags:
        """The spans ``rows`` (in that order), renumbered from 0."""
        owner = self.owner.numpy()
        first, last = np.searchsorted(owner, rows, "left"), np.searchsorted(owner, rows, "right")
        entries = torch.as_tensor(np.concatenate([np.arange(a, b) for a, b in zip(first, last, strict=True)]))
        new_owner = torch.as_tensor(np.repeat(np.arange(len(rows)), last - first))
        return TokenBags(self.token_ids[entries], new_owner, self.lengths[torch.as_tensor(rows)])

    @classmethod
    def concat(cls, parts: Sequence[TokenBags]) -> TokenBags:
        """The spans of ``parts``, one after the other."""
        offsets = np.cumsum([0] + [len(p.lengths) for p in parts[:-1]])
        return cls(
            torch.cat([p.token_ids for p in parts]),
            torch.cat([p.owner + int(o) for p, o in zip(parts, offsets, strict=True)]),
            torch.cat([p.lengths for p in parts]),
        )

    def slice(self, first: int, last: int) -> TokenBags:
        """The spans [first, last), renumbered from 0."""
        a, b = (int(torch.searchsorted(self.owner, v)) for v in (first, last))
        return TokenBags(self.token_ids[a:b], self.owner[a:b] - first, self.lengths[first:last])


def inverse_document_frequency(bags: TokenBags, vocab_size: int) -> torch.Tensor:
    """log(1 + (P − df + 0.5) / (df + 0.5)) of every piece, df = spans holding it.  → (V,)"""
    df = np.bincount(bags.token_ids.numpy(), minlength=vocab_size)
    n = bags.lengths.shape[0]
    return torch.as_tensor(np.log1p((n - df + 0.5) / (df + 0.5)), dtype=torch.float32)


@dataclass
class CollectionIndex:
    """The indexed documents: passages (runs of sentences), sentences, their embeddings and token bags."""

    weights_id: str  # of the checkpoint that built it
    document_ids: list[str]  # (D,)
    sentence_document: torch.Tensor  # (S,) int64 row in document_ids of each sentence
    sentence_number: torch.Tensor  # (S,) int64 index of each sentence among its document's sentences
    sentence_spans: torch.Tensor  # (S, 2) int64 character spans in its document's text
    sentence_kind: torch.Tensor  # (S,) int8 bits: a whole sentence, quotes a figure (``model.inference.sentences``)
    passage_first: torch.Tensor  # (P + 1,) int64 passage p holds sentences [first[p], first[p + 1])
    passage_spans: torch.Tensor  # (P, 2) int64 character spans
    passage_emb: torch.Tensor  # (P, e) unit
    sentence_emb: torch.Tensor  # (S, e) unit
    passage_dense: torch.Tensor  # (P, 384) float16 unit MiniLM embeddings of the passages' text
    sentence_dense: torch.Tensor  # (S, 384) float16 unit MiniLM embeddings of the sentences, read in their passage
    passage_tokens: TokenBags
    sentence_tokens: TokenBags
    passage_words: WordBags  # the lexical term's word counts
    sentence_words: WordBags
    sentence_counted: WordBags  # the words each sentence's figures count (``model.inference.sentences``)
    sentence_speaker: WordBags  # the words of its speaker in a transcript (``ingest.segment.turn_speakers``)
    vocab_size: int
    passage_token_spans: torch.Tensor  # (P, 2) int64 token spans, documents' tokens one after the other
    document_tokens: torch.Tensor  # (D,) int64 tokens of each document
    stores: list[DocumentStore] | None = None  # (D,) what a read needs of each document; None: not kept

    def __post_init__(self) -> None:
        self.passage_document = self.sentence_document[self.passage_first[:-1]]  # (P,)
        n_docs = len(self.document_ids)
        docs = torch.zeros(n_docs, self.passage_emb.shape[1]).index_add_(0, self.passage_document, self.passage_emb)
        self.document_emb = F.normalize(docs, dim=-1)  # (D, e)

    @property
    def passages(self) -> int:
        return self.passage_spans.shape[0]

    @cached_property
    def sentence_passage(self) -> torch.Tensor:
        """(S,) int64 the passage of each sentence."""
        first = self.passage_first
        return torch.repeat_interleave(torch.arange(self.passages), first[1:] - first[:-1])

    @cached_property
    def passage_asks(self) -> torch.Tensor:
        """(P,) bool: most of the passage's whole sentences ask questions (a questionnaire, a page of FAQ headings):
        its match with a question is the likeness of two questions, not an answer."""
        whole = (self.sentence_kind & WHOLE) > 0
        asks = whole & ((self.sentence_kind & QUESTION) > 0)
        wholes = torch.zeros(self.passages).index_add_(0, self.sentence_passage, whole.float())  # (P,)
        questions = torch.zeros(self.passages).index_add_(0, self.sentence_passage, asks.float())  # (P,)
        return 2 * questions > wholes

    @cached_property
    def idf(self) -> torch.Tensor:
        """(V,) inverse document frequency of every piece over the index's passages."""
        return inverse_document_frequency(self.passage_tokens, self.vocab_size)

    # ------------------------------------------------------------------ build

    @classmethod
    @torch.no_grad()
    def build(cls, model: Model, documents: Sequence[DocumentText]) -> CollectionIndex:
        """Encode ``documents``, each as its own stream (the cost of a prefill grows with the square of its length:
        the indexer scores every earlier cached entry)."""
        if not documents:
            raise ValueError("an index needs at least one document")
        return cls.concat([cls._encode(model, document) for document in documents])

    @classmethod
    def empty(cls, model: Model) -> CollectionIndex:
        """The index of no document: a shard's part of a question over documents that are all on other shards."""
        none = np.zeros(0, np.int64)
        embedding = model.net.evidence.embed_spans(torch.zeros(0, model.net.cfg.d_model))
        return cls(
            weights_id=model.net.cfg.weights_id,
            document_ids=[],
            sentence_document=_int(none),
            sentence_number=_int(none),
            sentence_spans=_int(none, 2),
            sentence_kind=torch.zeros(0, dtype=torch.int8),
            passage_first=_int([0]),
            passage_spans=_int(none, 2),
            passage_emb=embedding,
            sentence_emb=embedding,
            passage_dense=torch.zeros(0, DENSE_DIM).half(),
            sentence_dense=torch.zeros(0, DENSE_DIM).half(),
            passage_tokens=TokenBags.build([]),
            sentence_tokens=TokenBags.build([]),
            passage_words=WordBags.build([]),
            sentence_words=WordBags.build([]),
            sentence_counted=WordBags.build([]),
            sentence_speaker=WordBags.build([]),
            vocab_size=model.net.cfg.vocab_size,
            passage_token_spans=_int(none, 2),
            document_tokens=_int(none),
            stores=[],
        )

    @classmethod
    def _encode(cls, model: Model, document: DocumentText) -> CollectionIndex:
        net, tokenizer = model.net, model.tokenizer
        passages = pack_passages(document)
        ids, starts, _ = tokenizer.encode_offsets(document.text)
        p_tokens = char_to_token_spans(starts, passages.spans)  # (P, 2)
        s_tokens = char_to_token_spans(starts, document.sentences)  # (S, 2)
        state = net.model.new_state(record=True)
        means = encode_spans(net, ids, np.concatenate([p_tokens, s_tokens]), state)  # (P + S, d)
        n = len(document.sentences)
        sentence_texts = [document.sentence_text(i) for i in range(n)]
        passage_dense, sentence_dense = minilm().encode_with_parts(  # each sentence read within its passage
            [document.text[a:b] for a, b in passages.spans],
            [
                [(int(document.sentences[i, 0]) - a, int(document.sentences[i, 1]) - a) for i in range(f, z)]
                for (a, _), f, z in zip(passages.spans.tolist(), passages.first[:-1], passages.first[1:], strict=True)
            ],
        )
        empty = torch.zeros(0, net.cfg.d_model)
        return cls(
            weights_id=net.cfg.weights_id,
            document_ids=[document.id],
            sentence_document=torch.zeros(n, dtype=torch.int64),
            sentence_number=torch.arange(n),
            sentence_spans=_int(document.sentences, 2),
            sentence_kind=torch.from_numpy(document_kinds(document, sentence_texts)),
            passage_first=_int(passages.first),
            passage_spans=_int(passages.spans, 2),
            passage_emb=net.evidence.embed_spans(torch.cat([means[: len(p_tokens)], empty])),
            sentence_emb=net.evidence.embed_spans(torch.cat([means[len(p_tokens) :], empty])),
            passage_dense=torch.from_numpy(passage_dense).half(),
            sentence_dense=torch.from_numpy(
                np.concatenate([np.zeros((0, DENSE_DIM), np.float32), *sentence_dense])
            ).half(),
            passage_tokens=TokenBags.build([ids[a:b] for a, b in p_tokens]),
            sentence_tokens=TokenBags.build(tokenizer.encode_batch(sentence_texts)),
            passage_words=WordBags.build([f"{document.title}\n{document.text[a:b]}" for a, b in passages.spans]),
            sentence_words=WordBags.build(sentence_texts),
            sentence_counted=WordBags.build([counted_text(t) for t in sentence_texts]),
            sentence_speaker=speaker_bags(document),
            vocab_size=net.cfg.vocab_size,
            passage_token_spans=_int(p_tokens, 2),
            document_tokens=_int([len(ids)]),
            stores=[DocumentStore.of(state)],
        )

    @classmethod
    def concat(cls, parts: Sequence[CollectionIndex]) -> CollectionIndex:
        """The index of the documents of ``parts`` (indexes of distinct documents by one checkpoint), in order."""
        if not parts:
            raise ValueError("an index needs at least one document")
        if len({p.weights_id for p in parts}) > 1:
            raise ValueError("the parts were built by different checkpoints")
        if len(parts) == 1:
            return parts[0]
        sentences = np.cumsum([0] + [len(p.sentence_document) for p in parts[:-1]])
        documents = np.cumsum([0] + [len(p.document_ids) for p in parts[:-1]])
        firsts = [p.passage_first[:-1] + int(s) for p, s in zip(parts, sentences, strict=True)]
        total = int(sentences[-1]) + len(parts[-1].sentence_document)
        tokens = np.cumsum([0] + [int(p.document_tokens.sum()) for p in parts[:-1]])
        stores = [s for p in parts for s in p.stores] if all(p.stores is not None for p in parts) else None
        return cls(
            weights_id=parts[0].weights_id,
            document_ids=[i for p in parts for i in p.document_ids],
            sentence_document=torch.cat([p.sentence_document + int(d) for p, d in zip(parts, documents, strict=True)]),
            sentence_number=torch.cat([p.sentence_number for p in parts]),
            sentence_spans=torch.cat([p.sentence_spans for p in parts]),
            sentence_kind=torch.cat([p.sentence_kind for p in parts]),
            passage_first=torch.cat([*firsts, torch.tensor([total])]),
            passage_spans=torch.cat([p.passage_spans for p in parts]),
            passage_emb=torch.cat([p.passage_emb for p in parts]),
            sentence_emb=torch.cat([p.sentence_emb for p in parts]),
            passage_dense=torch.cat([p.passage_dense for p in parts]),
            sentence_dense=torch.cat([p.sentence_dense for p in parts]),
            passage_tokens=TokenBags.concat([p.passage_tokens for p in parts]),
            sentence_tokens=TokenBags.concat([p.sentence_tokens for p in parts]),
            passage_words=WordBags.concat([p.passage_words for p in parts]),
            sentence_words=WordBags.concat([p.sentence_words for p in parts]),
            sentence_counted=WordBags.concat([p.sentence_counted for p in parts]),
            sentence_speaker=WordBags.concat([p.sentence_speaker for p in parts]),
            vocab_size=parts[0].vocab_size,
            passage_token_spans=torch.cat([p.passage_token_spans + int(t) for p, t in zip(parts, tokens, strict=True)]),
            document_tokens=torch.cat([p.document_tokens for p in parts]),
            stores=stores,
        )

    def split(self) -> list[CollectionIndex]:
        """Each document's own index, in order: the parts ``concat`` joins (a question over one document is asked
        over its part: the terms' z-scores and word frequencies are the part's)."""
        sentences = np.searchsorted(self.sentence_document.numpy(), np.arange(len(self.document_ids) + 1))
        passages = np.searchsorted(self.passage_document.numpy(), np.arange(len(self.document_ids) + 1))
        tokens = np.cumsum([0, *self.document_tokens.tolist()])
        parts = []
        for d, document_id in enumerate(self.document_ids):
            (s0, s1), (p0, p1) = (int(sentences[d]), int(sentences[d + 1])), (int(passages[d]), int(passages[d + 1]))
            parts.append(
                CollectionIndex(
                    weights_id=self.weights_id,
                    document_ids=[document_id],
                    sentence_document=self.sentence_document[s0:s1] - d,
                    sentence_number=self.sentence_number[s0:s1],
                    sentence_spans=self.sentence_spans[s0:s1],
                    sentence_kind=self.sentence_kind[s0:s1],
                    passage_first=self.passage_first[p0 : p1 + 1] - s0,
                    passage_spans=self.passage_spans[p0:p1],
                    passage_emb=self.passage_emb[p0:p1],
                    sentence_emb=self.sentence_emb[s0:s1],
                    passage_dense=self.passage_dense[p0:p1],
                    sentence_dense=self.sentence_dense[s0:s1],
                    passage_tokens=self.passage_tokens.slice(p0, p1),
                    sentence_tokens=self.sentence_tokens.slice(s0, s1),
                    passage_words=self.passage_words.slice(p0, p1),
                    sentence_words=self.sentence_words.slice(s0, s1),
                    sentence_counted=self.sentence_counted.slice(s0, s1),
                    sentence_speaker=self.sentence_speaker.slice(s0, s1),
                    vocab_size=self.vocab_size,
                    passage_token_spans=self.passage_token_spans[p0:p1] - int(tokens[d]),
                    document_tokens=self.document_tokens[d : d + 1],
                    stores=None if self.stores is None else [self.stores[d]],
                )
            )
        return parts

    # ------------------------------------------------------------------ save / load

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays ``from_arrays`` rebuilds the index from (the stores are kept apart: ``stores``)."""
        arrays = {
            "format": np.array(FORMAT),
            "weights_id": np.array(self.weights_id),
            "document_ids": np.array(self.document_ids, dtype=str),
            "vocab_size": np.array(self.vocab_size),
        }
        for name in INT_ARRAYS:
            arrays[name] = getattr(self, name).numpy()
        for name in FLOAT_ARRAYS:
            arrays[name] = getattr(self, name).numpy()
        for name in ("passage_tokens", "sentence_tokens"):
            bags = getattr(self, name)
            for part in ("token_ids", "owner", "lengths"):
                arrays[f"{name}.{part}"] = getattr(bags, part).numpy()
        for name in WORD_BAGS:
            arrays |= getattr(self, name).arrays(name)
        return arrays

    @classmethod
    def from_arrays(
        cls,
        arrays: dict[str, np.ndarray],
        document_ids: Sequence[str],
        weights_id: str,
        stores: list[DocumentStore] | None = None,
    ) -> CollectionIndex:
        """The index saved by ``to_arrays`` (with its documents' ``stores``); ValueError when it is of another
        format, another set of documents or another checkpoint, or incomplete."""
        try:
            if int(arrays["format"]) != FORMAT or str(arrays["weights_id"]) != weights_id:
                raise ValueError("the stored index is of another format or was built by another checkpoint")
            if arrays["document_ids"].tolist() != list(document_ids):
                raise ValueError("the stored index holds another set of documents")
            tensors = {name: torch.from_numpy(value) for name, value in arrays.items() if value.dtype.kind in "iuf"}
            bags = {
                name: TokenBags(*(tensors[f"{name}.{part}"] for part in ("token_ids", "owner", "lengths")))
                for name in ("passage_tokens", "sentence_tokens")
            }
            return cls(
                weights_id=weights_id,
                document_ids=list(document_ids),
                **{name: tensors[name] for name in (*INT_ARRAYS, *FLOAT_ARRAYS)},
                **bags,
                **{name: WordBags.from_arrays(arrays, name) for name in WORD_BAGS},
                vocab_size=int(arrays["vocab_size"]),
                stores=stores,
            )
        except KeyError as error:
            raise ValueError(f"the stored index lacks {error}") from error


def speaker_bags(document: DocumentText) -> WordBags:
    """The words that name each sentence's speaker in a transcript (``ingest.segment.turn_speakers``; none outside
    one): the label's words ("Industrial Designer"), the name alone of an earnings call's "Jerry Turin - Chief
    Financial Officer", or the letter alone of a label that ends in one ("Professor C": QMSum asks "What did C think
    about …?")."""
    labels = turn_speakers(document.text, document.sentences[:, 0].tolist())
    return WordBags.build([_SPEAKER_LETTER.sub(r"\1", label.split(" - ")[0]) for label in labels])


_SPEAKER_LETTER = re.compile(r"^.* ([A-Z])$")


def document_kinds(document: DocumentText, texts: Sequence[str]) -> np.ndarray:
    """The kinds of the document's sentences (``texts``: their text, in order): what ``sentence_kinds`` reads from
    each, where a sentence of its references section is never whole (an entry of the list, "[35] Daniel M Ziegler,
    Nisan Stiennon, …", is what another work says, not an answer: cited after every passage of the document's own
    text, :func:`is_deferred`).  → (S,) int8"""
    kinds = sentence_kinds(texts)
    if document.references:
        kinds[sorted(document.references)] &= ~WHOLE
    return kinds


def upgraded(arrays: dict[str, np.ndarray], document: DocumentText) -> dict[str, np.ndarray] | None:
    """The arrays of a stored index of the format before this one, brought to :data:`FORMAT` without encoding the
    document again: format 15 took a references section's entries and a numbered run-in heading for whole sentences and
    knew no sentence that only says where something is shown; the sentence kinds are read again here
    (:func:`document_kinds`) from ``document`` (the one the index was built from); None for any other format, or when
    the document's sentences are not the index's."""
    if int(arrays.get("format", -1)) != FORMAT - 1 or len(document.sentences) != len(arrays["sentence_number"]):
        return None
    texts = [document.sentence_text(i) for i in range(len(document.sentences))]
    return arrays | {"format": np.array(FORMAT), "sentence_kind": document_kinds(document, texts)}


INT_ARRAYS = (
    "sentence_document",
    "sentence_number",
    "sentence_spans",
    "sentence_kind",
    "passage_first",
    "passage_spans",
    "passage_token_spans",
    "document_tokens",
)
FLOAT_ARRAYS = ("passage_emb", "sentence_emb", "passage_dense", "sentence_dense")
WORD_BAGS = ("passage_words", "sentence_words", "sentence_counted", "sentence_speaker")


def _int(values: np.ndarray, width: int = 0) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, np.int64).reshape((-1, width) if width else -1))


# ---------------------------------------------------------------------- the evidence score


Total = Callable[[torch.Tensor], torch.Tensor]
"""Sums a float64 tensor over the shards of a collection (``app.services.shards``: an all-reduce over the ranks):
the collection-wide statistics — word and piece frequencies, the terms' means and deviations, which words name a
document — that make a shard's scores those of the whole collection."""


def alone(x: torch.Tensor) -> torch.Tensor:
    """The :data:`Total` of a collection held whole."""
    return x


def _zscores(terms: dict[str, torch.Tensor], total: Total = alone) -> dict[str, torch.Tensor]:
    """Each term z-scored over the collection's spans (over all shards: one sum of their counts, sums and sums of
    squares, in float64).  {name: (P,)} → {name: (P,)}"""
    stats = total(
        torch.stack(
            [
                torch.stack([v.new_tensor(v.numel()), v.sum(), (v * v).sum()])
                for v in (t.double() for t in terms.values())
            ]
        )
    )  # (T, 3)
    scored = {}
    for (name, x), (n, s, ss) in zip(terms.items(), stats.tolist(), strict=True):
        if n < 2:
            scored[name] = x * 0
            continue
        mean, var = s / n, max(ss - s * s / n, 0.0) / (n - 1)
        scored[name] = ((x.double() - mean) / max(var**0.5, 1e-6)).float()
    return scored


def _zscore(x: torch.Tensor) -> torch.Tensor:
    return _zscores({"x": x})["x"]


def question_ids(model: Model, question: str) -> torch.Tensor:
    return torch.as_tensor(model.tokenizer.encode(question)[:MAX_QUESTION_TOKENS], dtype=torch.int64)


def match_similarity(
    net: IndexPoolNet, question: torch.Tensor, keys: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The question's pieces that carry meaning (Tq',) — those whose embedding is not zero — and their similarity
    to every vocabulary key (Tq', V) of the TokenMatchHead (``keys``: ``Model.match_keys``)."""
    question = question[net.model.embed.weight[question].norm(dim=-1) > 0]
    return question, keys[question] @ keys.T


def match_scores(
    net: IndexPoolNet, similarity: tuple[torch.Tensor, torch.Tensor], bags: TokenBags, idf: torch.Tensor
) -> torch.Tensor:
    """TokenMatchHead MaxSim of a question — its :func:`match_similarity`, computed once per question: it scores
    every passage, then the sentences of each cited one — against the spans of ``bags``.  → (P,)"""
    pieces, table = similarity
    if pieces.numel() == 0:
        return torch.zeros(bags.lengths.shape[0])
    weights = net.match.question_weights(pieces, net.model.embed.weight, idf, net.pool.log_prior)
    return net.match.match(table, weights, bags.token_ids, bags.owner, bags.lengths)


@dataclass
class Question:
    """A question as the score reads it."""

    ids: torch.Tensor  # (Tq,) token ids
    embedding: torch.Tensor  # (e,) unit
    similarity: tuple[torch.Tensor, torch.Tensor]  # the match head's: pieces (Tq',), their keys' similarity (Tq', V)
    words: torch.Tensor  # (Q,) int64 distinct word ids, ascending (the lexical term)
    dense: torch.Tensor  # (384,) unit MiniLM embedding (the dense term)
    asks_figure: bool = False  # "How many …": the cited sentence should quote a figure
    names_document: bool = False  # it names a document of the index it was encoded for (:func:`without_names`)
    documents: tuple[int, ...] = ()  # rows of that index's documents whose title it names (:func:`named_documents`)
    some_named: bool = False  # it names some documents of the collection, maybe all on other shards than the index
    counted: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))  # (0 or 1,) the word
    # id of what a figure question counts ("How many papers …": papers; ``model.inference.sentences.counted_word``)
    subject: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))  # (N,) ascending word
    # ids of its capitalised words (the first aside) that name no document: what it counts them of ("S2ORC")
    overview: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))  # (N,) ascending word
    # ids of the capitalised words (the first aside) of a question that asks nothing but what they name is or does
    # (``_OVERVIEW_WORDS``): the names its introducing sentences hold (:func:`lead_sentences`)
    total: Total = field(default=alone, repr=False, compare=False)  # the index is a shard: sums over the shards
    asks_date: bool = False  # "When …", "What year …": the cited sentence should give a date
    speakers: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))  # (N,) ascending word
    # ids that may name a transcript's speaker: its words, a one-letter one only in upper case ("Grad A", not "a")
    _counted: tuple[CollectionIndex, Frequencies, torch.Tensor] | None = field(default=None, repr=False, compare=False)

    def frequencies(self, index: CollectionIndex) -> Frequencies:
        """The question's word frequencies over ``index``'s passages (over every shard's, when ``index`` is one),
        counted once per index (the lexical term, the cited sentences' lexical term and the coverage all weigh
        words by them)."""
        return self._count(index)[1]

    def idf(self, index: CollectionIndex) -> torch.Tensor:
        """(V,) the pieces' inverse document frequency over ``index``'s passages (every shard's, when it is one):
        the match head's question weights."""
        return self._count(index)[2]

    def _count(self, index: CollectionIndex) -> tuple[CollectionIndex, Frequencies, torch.Tensor]:
        if self._counted is None or self._counted[0] is not index:
            words = Frequencies.over(index.passage_words, self.words)
            if self.total is alone:
                self._counted = (index, words, index.idf)
            else:  # one sum for both: the words' and the pieces' document frequencies, the passages and their words
                df = np.bincount(index.passage_tokens.token_ids.numpy(), minlength=index.vocab_size)
                summed = self.total(
                    torch.cat(
                        [
                            words.df.double(),
                            torch.from_numpy(df).double(),
                            torch.tensor(
                                [float(words.spans), float(index.passage_words.lengths.sum())], dtype=torch.float64
                            ),
                        ]
                    )
                )
                q, spans, length = words.df.shape[0], float(summed[-2]), float(summed[-1])
                words = Frequencies(summed[:q].float(), int(spans), length / spans if spans else 0.0)
                pieces = summed[q:-2].numpy()
                idf = torch.as_tensor(np.log1p((spans - pieces + 0.5) / (pieces + 0.5)), dtype=torch.float32)
                self._counted = (index, words, idf)
        return self._counted

    @classmethod
    @torch.no_grad()
    def encode(
        cls, model: Model, question: str, index: CollectionIndex | None = None, total: Total = alone
    ) -> Question:
        """The question as the score reads it; over ``index``, the words that name one of its documents are left to
        the lexical term (:func:`without_names`). ``total``: ``index`` is a shard of a collection (its shards all
        encode the question at once, and sum their statistics with it)."""
        names = Names.of(index, question, total) if index is not None else None  # once for both of its uses
        about = names.without() if names is not None else question
        ids = question_ids(model, about)
        dense = torch.from_numpy(minilm().encode([about])[0])
        words = question_words(with_aliases(question))
        figure = _ASKS_FIGURE.search(question) is not None
        counted = counted_word(question) if figure else None
        embedding = model.net.encode_question(ids)
        similarity = match_similarity(model.net, ids, model.match_keys)
        named = names.documents() if names is not None else ()
        some = names is not None and names.some_named
        return cls(
            ids,
            embedding,
            similarity,
            words,
            dense,
            figure,
            about != question,
            named,
            some,
            question_words(counted or ""),
            _name_words([m for m in _NAME.finditer(about) if m.start() > 0]),
            _overview_names(question),
            total,
            _ASKS_DATE.match(question) is not None,
            speakers=question_words(" ".join(w for w in _LETTERS.findall(question) if len(w) > 1 or w.isupper())),
        )


_LETTERS = re.compile(r"[A-Za-z0-9]+")


def _overview_names(question: str) -> torch.Tensor:
    """(N,) the word ids of ``question``'s capitalised words (the first aside) when its other words are stop words
    and ``_OVERVIEW_WORDS`` only, else none."""
    names = [m for m in _NAME.finditer(question) if m.start() > 0]
    rest = question_words(_NAME.sub(lambda m: " " if m.start() > 0 else m.group(), question))
    rest = rest[~torch.isin(rest, stopword_ids())]
    if not names or torch.isin(rest, _overview_ids()).logical_not().any():
        return torch.zeros(0, dtype=torch.int64)
    return _name_words(names)


def _name_words(names: list[re.Match[str]]) -> torch.Tensor:
    """(N,) the word ids of capitalised words, without their possessive ("Acme's" → acme)."""
    return question_words(" ".join(_POSSESSIVE.sub("", m.group()) for m in names))


@cache
def _overview_ids() -> torch.Tensor:
    return question_words(" ".join(_OVERVIEW_WORDS))


@cache
def _introducing_ids() -> torch.Tensor:
    return question_words(_INTRODUCING)


@dataclass
class Names:
    """A question's capitalised words (the first word aside) over an index, with what both of their uses read: which
    documents hold each in every passage's word bag, and in what share of their own sentences."""

    question: str
    index: CollectionIndex
    matches: list[re.Match[str]]
    ids: torch.Tensor  # (Q,) their distinct word ids, ascending
    everywhere: torch.Tensor  # (Q, D) bool: in every passage's bag of the document (which holds its title)
    in_text: torch.Tensor  # (Q, D) the share of the document's sentences that hold it (its text, not its title)
    total: Total = alone  # the index is a shard: the other shards' documents count too
    some_named: bool = False  # set by :meth:`documents`: it names some documents of the collection (of any shard)

    @classmethod
    def of(cls, index: CollectionIndex, question: str, total: Total = alone) -> Names:
        matches = [m for m in _NAME.finditer(question) if m.start() > 0]
        ids = torch.as_tensor(sorted({i for m in matches for i in _match_ids(m)}), dtype=torch.int64)
        documents = len(index.document_ids)
        if ids.numel() == 0 or not index.passages:
            none = torch.zeros(ids.numel(), documents)
            return cls(question, index, matches, ids, none.bool(), none, total)
        everywhere = held_everywhere(index.passage_words, index.passage_document, ids)
        in_text = held_share(index.sentence_words, index.sentence_document, ids)
        return cls(question, index, matches, ids, everywhere, in_text, total)

    def _any(self, held: torch.Tensor) -> torch.Tensor:
        """(Q, D) bool → (Q,) bool: held by some document of the collection (of any shard)."""
        return self.total(held.any(dim=1).double()) > 0

    def without(self) -> str:
        """The question without the words that name a document of the index (:func:`without_names`)."""
        named = set(self.ids[self._any(self.everywhere & (self.in_text < MAX_NAME_SHARE))].tolist())
        if not named:
            return self.question
        kept, at = [], 0
        for m in self.matches:
            if not named.isdisjoint(_match_ids(m)):
                kept.append(self.question[at : m.start()])
                at = m.end()
        about = " ".join("".join([*kept, self.question[at:]]).split())
        return about if not torch.isin(question_words(about), stopword_ids()).all() else self.question

    def documents(self) -> tuple[int, ...]:
        """The rows of the index's documents the question names (:func:`named_documents`)."""
        index = self.index
        if self.total is alone and not self.everywhere.any():  # a shard sums with the others whatever it holds
            return ()
        held = held_share(index.sentence_words, index.sentence_passage, self.ids)  # (Q, P)
        absent = (held == 0).float()  # (Q, P): not in the passage's text
        untold = torch.zeros(self.everywhere.shape).index_add_(1, index.passage_document, absent) > 0  # (Q, D)
        titled = self.everywhere & untold  # (Q, D): the word is in the document's title
        uses = self.in_text * torch.bincount(index.sentence_document, minlength=titled.shape[1])  # (Q, D) sentences
        runs = self._runs()
        by_run = torch.zeros(len(runs), titled.shape[1], dtype=torch.bool)  # (R, D): titled by each word of a run
        for r, rows in enumerate(runs):
            by_run[r] = titled[rows].all(dim=0)
        sums = self.total(torch.cat([(uses * titled).sum(dim=1), uses.sum(dim=1), by_run.sum(dim=1)]).double())
        in_titled, anywhere, run_titles = sums.split([len(self.ids), len(self.ids), len(runs)])
        pure = in_titled >= NAME_PURITY * anywhere  # (Q,): the documents it titles use it, others hardly ("COVID")
        named = torch.zeros(titled.shape[1], dtype=torch.bool)
        for rows, run, titles in zip(runs, by_run, run_titles, strict=True):
            named |= run if titles > 0 and len(rows) > 1 else titled[rows[pure[rows]]].any(dim=0)
        every = self.total(torch.tensor([float(named.sum()), float(named.numel())], dtype=torch.float64))
        self.some_named = bool(0 < every[0] < every[1])
        return tuple(torch.nonzero(named).flatten().tolist()) if every[0] < every[1] else ()

    def _runs(self) -> list[torch.Tensor]:
        """The rows of :attr:`ids` of each run of the question's capitalised words with only spaces between them: a
        run of two or more names the documents whose titles hold all its words ("the Beyond Summarization study",
        though "beyond" and "summarization" are other papers' words too), else each of its words is a name alone."""
        runs: list[list[re.Match[str]]] = []
        for m in self.matches:
            if runs and self.question[runs[-1][-1].end() : m.start()].isspace():
                runs[-1].append(m)
            else:
                runs.append([m])
        words = [torch.tensor(sorted({i for m in run for i in _match_ids(m)}), dtype=torch.int64) for run in runs]
        return [torch.searchsorted(self.ids, w) for w in words]


def _match_ids(name: re.Match[str]) -> list[int]:
    """The word ids of a capitalised word without its possessive ("Multi-LexSum" → multi, lexsum; "Acme's" → acme)."""
    return word_ids(_POSSESSIVE.sub("", name.group()))


def named_documents(index: CollectionIndex, question: str) -> tuple[int, ...]:
    """The rows of ``index``'s documents that ``question`` names — a capitalised word of it (the first aside) is in
    its title or file name ("What does the PaperMage paper propose?", "How many employees does Borealis have?") —
    when that is some of the documents, not all. A title word is in all of the document's passages' word bags, which
    hold the title, and missing from the text of one passage at least: a speaker's label that every passage of a
    transcript holds ("Industrial Designer: …") names no document. A word that the text of other documents uses too
    is a topic, not a name ("COVID" over meetings, one of them filed as covid_2), unless the documents it titles hold
    ``NAME_PURITY`` of its uses (S2ORC's paper, which another paper cites once). Capitalised words in a row name the
    documents whose titles hold them all ("the Beyond Summarization study")."""
    return Names.of(index, question).documents()


def without_names(index: CollectionIndex, question: str) -> str:
    """``question`` without its capitalised words (the first word aside) that name a document of ``index`` — found in
    all of its passages' word bags, which hold its title and file name ("How many employees does Borealis have?"
    over Borealis's 10-K) — when other words are left. Such a word says which document to read, not which passage:
    the lexical term, whose bags hold the titles, credits every passage of the named document with it, while the
    match, semantic and dense terms, which see only the passage's text, would favour the few passages that repeat
    the name (the cover page, "Borealis Networks, Inc. designs …"). A word that the document's own sentences use
    more often (``MAX_NAME_SHARE``: "S2ORC" in the S2ORC paper, "JSON" in the json module's documentation) is its
    topic, which an answer sentence names ("S2ORC contains three times more full text papers …"), and stays."""
    return Names.of(index, question).without()


def read_term(mass: torch.Tensor) -> torch.Tensor:
    """The read's evidence term from the attention mass of each passage, before z-scoring.  (P,) → (P,)"""
    return (mass + READ_FLOOR).log()


@torch.no_grad()
def evidence_terms(
    model: Model, index: CollectionIndex, question: Question, read: ReadResult | None = None
) -> dict[str, torch.Tensor]:
    """The z-scored terms of the evidence score of every passage (z-scored over every shard's passages when the
    question was encoded for a shard).
    → {"match", "semantic", "doc", "lexical", "dense", "sentence", "speaker", "speaker_dense"[, "read"]}: (P,)"""
    net = model.net
    match = match_scores(net, question.similarity, index.passage_tokens, question.idf(index))
    documents = index.passage_document
    sentence_cosines = cosines(index.sentence_dense, question.dense)  # (S,)
    terms = {
        "match": net.match.logits(match, documents, len(index.document_ids)),
        "semantic": index.passage_emb @ question.embedding,
        "doc": (index.document_emb @ question.embedding)[documents],
        "lexical": bm25(index.passage_words, question.words, question.frequencies(index)),
        "dense": cosines(index.passage_dense, question.dense),
        "sentence": best_of_passage(index, sentence_cosines),
        **speaker_terms(index, question, sentence_cosines),
    }
    if read is not None:
        terms["read"] = read_term(read.mass)
    return _zscores(terms, question.total)


def speaker_terms(
    index: CollectionIndex, question: Question, sentence_cosines: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The speaker terms before z-scoring, over each passage's sentences that a speaker the question names says in
    a transcript (:func:`speaking_sentences`; 0 where there is none): the best BM25 of the question's words
    ("speaker") and the best MiniLM cosine ``sentence_cosines`` (S,), from 0 up ("speaker_dense"). "What did C
    think about the budget?": the passage where Professor C talks of it, not one where others do.  → {name: (P,)}"""
    speaking = speaking_sentences(index, question)
    if not speaking.any():
        return {"speaker": torch.zeros(index.passages), "speaker_dense": torch.zeros(index.passages)}
    lexical = bm25(index.sentence_words, question.words, question.frequencies(index))  # (S,)
    return {
        "speaker": best_of_passage(index, lexical.masked_fill(~speaking, 0.0)),
        "speaker_dense": best_of_passage(index, sentence_cosines.clamp_min(0.0).masked_fill(~speaking, 0.0)),
    }


def cosines(vectors: torch.Tensor, query: torch.Tensor, rows: int = 2048) -> torch.Tensor:
    """float32 dot products of float16 unit ``vectors`` (N, e) with ``query`` (e,), a block of rows at a time, small
    enough to stay in the CPU's cache (10M tokens' 450K sentences: 104 ms in blocks of 8192 rows, 30 ms in 2048).
    → (N,)"""
    return torch.cat([torch.zeros(0), *(block.float() @ query for block in vectors.split(rows))])


def best_of_passage(index: CollectionIndex, values: torch.Tensor) -> torch.Tensor:
    """The largest of the values of each passage's sentences.  (S,) → (P,)"""
    return torch.full((index.passages,), float("-inf")).scatter_reduce(0, index.sentence_passage, values, "amax")


def evidence_score(model: Model, terms: dict[str, torch.Tensor]) -> torch.Tensor:
    """The evidence score from the terms of :func:`evidence_terms` (a missing read term counts 0).  → (P,)"""
    w = model.weights
    score = w.match * terms["match"] + w.semantic * terms["semantic"] + w.doc * terms["doc"]
    score = score + w.lexical * terms["lexical"] + w.dense * terms["dense"] + w.sentence * terms["sentence"]
    if "speaker" in terms:
        score = score + SPEAKER_LEXICAL * terms["speaker"] + SPEAKER_DENSE * terms["speaker_dense"]
    return score + w.read * terms["read"] if "read" in terms else score


def read_cache(
    model: Model, index: CollectionIndex, config: CacheConfig | None = None, tiers: KVTiers | None = None
) -> ReadCache:
    """The read cache of an index whose stores it holds (evaluation, training): each document's tier 1 pooled under
    ``config`` (default: IndexPool 4:1 INT8), tier 2 ``tiers`` (default: none)."""
    if index.stores is None:
        raise ValueError("the index keeps no stores: build it with CollectionIndex.build")
    config = config or CacheConfig()
    documents = [
        (document_id, store, DocumentEntries.pool(store, config, model))
        for document_id, store in zip(index.document_ids, index.stores, strict=True)
    ]
    return ReadCache(model, documents, config, tiers if tiers is not None else KVTiers(0))


def read(model: Model, index: CollectionIndex, cache: ReadCache, question: Question) -> ReadResult:
    """The question's read over ``cache`` (the index's documents, in order), as passage masses."""
    return read_passages(model, index.passage_token_spans, cache, question.ids)


def holding_all(bags: WordBags, words: torch.Tensor) -> torch.Tensor:
    """Which spans of ``bags`` hold every one of ``words`` (Q,) (distinct).  → (P,) bool"""
    present = bags.entries(words)
    held = torch.zeros(bags.lengths.shape[0]).index_add_(0, bags.owner[present], torch.ones(present.shape[0]))
    return held == words.numel()


def counting_sentences(index: CollectionIndex, question: Question) -> torch.Tensor:
    """Which sentences count what the question asks the count of: a figure of the sentence counts the question's
    counted word ("81.1M … papers" for "How many papers …"; ``model.inference.sentences.counted_text``), and the
    sentence holds the question's subject words ("S2ORC": not "MAG contained 213M papers" for "How many papers does
    S2ORC contain?") — or, when no sentence does, its passage does, whose word bag holds its document's title ("How
    many participants completed the Paper Plain study?": "A total of 12 participants completed the study" in the
    Paper Plain paper) — or, when no passage does, its document does (a call transcript titled "AMZN Q2 2025
    Earnings Call" whose turns say "Amazon": "We deployed our 1 millionth robot …").  → (S,) bool"""
    sentences = index.sentence_words.lengths.shape[0]
    found = torch.zeros(sentences, dtype=torch.bool)
    if question.counted.numel() == 0:
        return found
    counted = index.sentence_counted
    found[counted.owner[counted.entries(question.counted)]] = True
    if question.subject.numel() == 0:
        return found
    in_passage = holding_all(index.passage_words, question.subject)  # (P,)
    in_document = torch.ones(len(index.document_ids), dtype=torch.bool)  # (D,) each subject word somewhere in it
    for word in question.subject:
        held = torch.zeros_like(in_document)
        held[index.passage_document[index.passage_words.owner[index.passage_words.entries(word.reshape(1))]]] = True
        in_document &= held
    for holds in (
        holding_all(index.sentence_words, question.subject),
        in_passage[index.sentence_passage],
        in_document[index.sentence_document],
    ):
        subject = found & holds
        if question.total(subject.any().double().reshape(1)) > 0:  # over every shard: the same rule on each
            return subject
    return subject


def speaking_sentences(index: CollectionIndex, question: Question) -> torch.Tensor:
    """Which sentences a speaker the question names speaks in a transcript: every word of the label of the turn
    that holds the sentence (:attr:`CollectionIndex.sentence_speaker`) is a word of the question ("What is the name
    of the Industrial Designer?": "'Kay um my name is Gaurav ." in the Industrial Designer's turn, not the Marketing
    Expert's "So , my name's Cat" beside it).  → (S,) bool"""
    bags = index.sentence_speaker
    sentences = bags.lengths.shape[0]
    labelled = torch.bincount(bags.owner, minlength=sentences)  # (S,) distinct words of each sentence's speaker
    named = torch.bincount(bags.owner[bags.entries(question.speakers)], minlength=sentences)
    return (labelled > 0) & (named == labelled)


def lead_sentences(index: CollectionIndex, question: Question) -> torch.Tensor:
    """For a question that asks what documents it names are or do and nothing more (:attr:`Question.overview`), of
    each document whose title holds its names (they are in every passage's word bag): the first whole sentence that
    holds them and says what something is or does (``_INTRODUCING``) — the one that introduces it ("This paper
    introduces CiteSee, a paper reading tool …", "We introduce papermage, an open-source Python toolkit …"), not the
    sentence that says "paper" most, nor the title and author lines.  → (S,) bool"""
    found = torch.zeros(index.sentence_words.lengths.shape[0], dtype=torch.bool)
    names = question.overview
    if names.numel() == 0 or not index.passages:
        return found
    titled = held_everywhere(index.passage_words, index.passage_document, names).all(dim=0)  # (D,)
    if not titled.any():
        return found
    bags = index.sentence_words
    says = torch.zeros(found.shape[0], dtype=torch.bool)
    says[bags.owner[bags.entries(_introducing_ids())]] = True
    rows = torch.nonzero(holding_all(bags, names) & says & ((index.sentence_kind & WHOLE) > 0)).flatten()  # (n,)
    rows = rows[titled[index.sentence_document[rows]]]
    documents = index.sentence_document[rows]
    for document in documents.unique().tolist():
        own = rows[documents == document]
        found[own[index.sentence_number[own].argmin()]] = True
    return found


@torch.no_grad()
def best_sentence(
    model: Model,
    index: CollectionIndex,
    question: Question,
    passage: int,
    chosen: torch.Tensor | None = None,
    spoken: torch.Tensor | None = None,
) -> int:
    """The sentence (a row of the index's sentences) of ``passage`` that best answers the question: its token match,
    BM25 (word frequencies counted over the index's passages) and MiniLM cosine, z-scored over the passage's
    sentences and weighted by :data:`CITE_MATCH`, :data:`CITE_LEXICAL` and :data:`CITE_DENSE` (the semantic term by
    the evidence weights'), among its whole sentences if any (not a heading, a web address
    or a cell of a table: ``model.inference.sentences``), among those that do not only say where something is shown
    ("… are given in Table 8.") if any, and when the question asks for a figure ("How many
    employees …"), among those that quote one if any (a citation mark "[44]" is none), when it asks when ("When was
    …", "What year …"), among the whole ones that give a date if any — and among those, the ones ``spoken`` ((S,)
    bool) by a speaker the question names (:func:`speaking_sentences`) if any, then the ``chosen`` ones ((S,) bool:
    :func:`counting_sentences`, :func:`lead_sentences`) if any. A sentence that asks a question is answered
    by what follows it: the passage's next whole sentence that asks none is cited instead (a meeting's "Has HEFCW
    done any assessment …?" then the reply; an FAQ's question then its answer)."""
    first, last = int(index.passage_first[passage]), int(index.passage_first[passage + 1])
    bags = index.sentence_tokens.slice(first, last)
    match = match_scores(model.net, question.similarity, bags, question.idf(index))
    semantic = index.sentence_emb[first:last] @ question.embedding
    lexical = bm25(index.sentence_words.slice(first, last), question.words, question.frequencies(index))
    dense = index.sentence_dense[first:last].float() @ question.dense
    score = CITE_MATCH * _zscore(match) + model.weights.semantic * _zscore(semantic) + CITE_LEXICAL * _zscore(lexical)
    score = score + CITE_DENSE * _zscore(dense)
    kind = index.sentence_kind[first:last]
    whole = (kind & WHOLE) > 0
    score = _among(score, whole)  # never a fragment ("Non-standard.", a lone heading) when the passage has a sentence
    score = _among(score, (kind & POINTER) == 0)  # "… are given in Table 8.": what is in it, when the passage says
    if question.asks_figure:  # not "We also maintain employee networks." beside the head count
        score = _among(score, (kind & FIGURE) > 0)
    if question.asks_date:  # "When was the charter established?": "… signed into law … on April 17, 1982"
        score = _among(score, ((kind & DATE) > 0) & whole)
    if spoken is not None:
        score = _among(score, spoken[first:last])
    if chosen is not None:
        score = _among(score, chosen[first:last])
    best = int(score.argmax())
    if kind[best] & QUESTION:
        answers = torch.nonzero(whole[best + 1 :] & ((kind[best + 1 :] & QUESTION) == 0)).flatten()  # (n,)
        if answers.numel():
            best += 1 + int(answers[0])
    return first + best


def _among(score: torch.Tensor, wanted: torch.Tensor) -> torch.Tensor:
    """``score`` (n,) left to the candidates still in it (finite) that are ``wanted`` (n,) bool, when there are any;
    else unchanged."""
    keep = torch.isfinite(score) & wanted
    return score.masked_fill(~keep, float("-inf")) if keep.any() else score


def question_coverage(index: CollectionIndex, question: Question, passage: int) -> float:
    """The share of the question's word weight that ``passage`` holds (``model.inference.lexical.coverage``)."""
    return coverage(index.passage_words, question.words, passage, question.frequencies(index))


def dense_similarity(index: CollectionIndex, question: Question, passage: int) -> float:
    """The MiniLM cosine of the question and ``passage`` (the dense term before z-scoring)."""
    return float(index.passage_dense[passage].float() @ question.dense)


def is_confident(model: Model, index: CollectionIndex, question: Question, passage: int) -> tuple[bool, float]:
    """Whether an answer whose best passage is ``passage`` is a confident one, and the share of the question's word
    weight the passage holds: confident when that share reaches the checkpoint's ``min_coverage`` or the passage's
    MiniLM cosine reaches its ``confident_dense`` (a paraphrase shares few words; off-topic questions, measured by
    the calibration, rarely come that close)."""
    held = question_coverage(index, question, passage)
    w = model.weights
    return held >= w.min_coverage or dense_similarity(index, question, passage) >= w.confident_dense, held


@dataclass(frozen=True)
class Hit:
    """A cited passage, its score, and its best sentence."""

    passage: int  # row of the index's passages
    sentence: int  # row of the index's sentences
    score: float
    deferred: bool = False  # it comes after every other passage (:func:`is_deferred`)


def ranked_hits(
    model: Model, index: CollectionIndex, question: Question, reading: ReadResult | None = None
) -> Iterator[Hit]:
    """Every passage, best first, each with its best sentence, found as the caller reads on (the app skips the
    passages whose sentence it has already quoted); ``reading`` as in :func:`answer`. A question that names some of
    the documents (:attr:`Question.documents`) reads their passages first: "What does the PaperMage paper propose?"
    is answered from PaperMage even where another paper's passage says "paper" more often. A passage holding a
    sentence that counts what a figure question asks the count of (:func:`counting_sentences`) scores
    ``COUNT_BONUS`` more; the one that introduces a document a question asks what it is (:func:`lead_sentences`)
    ``LEAD_BONUS`` more, and that sentence is cited. In a transcript, a question that names a speaker ("What did
    the Marketing Expert say about the price?") cites in each passage what that speaker says if they speak in it
    (:func:`speaking_sentences`). A passage whose best sentence is a fragment (a table's cell, a
    heading left alone), or most of whose sentences ask questions, comes after every other passage
    (:func:`is_deferred`).
    The passages are scored at the first ``next``: over every shard, together with the other shards, when
    ``question`` was encoded for a shard."""
    with torch.no_grad():
        score = evidence_score(model, evidence_terms(model, index, question, reading))
        counting, leading = counting_sentences(index, question), lead_sentences(index, question)
        if counting.any():
            score = score + COUNT_BONUS * best_of_passage(index, counting.float())
        if leading.any():
            score = score + LEAD_BONUS * best_of_passage(index, leading.float())
        chosen = counting | leading
        speaking = speaking_sentences(index, question)
        spoken = speaking if speaking.any() else None
        order = torch.sort(score, descending=True, stable=True).indices  # equal scores: in the index's order
        if question.documents:  # the named documents' passages first, best first within each part
            other = ~torch.isin(index.passage_document[order], torch.tensor(question.documents))
            order = order[torch.sort(other.to(torch.uint8), stable=True).indices]
    deferred: list[Hit] = []  # passages without a whole sentence ("longt5", a web address) or of questions: last
    for block in order.split(RANKED_BLOCK):  # the caller reads a few: not every passage made a Python int
        for p in block.tolist():
            with torch.no_grad():
                sentence = best_sentence(model, index, question, p, chosen, spoken)
            hit = Hit(p, sentence, float(score[p]), is_deferred(index, p, sentence))
            if hit.deferred:
                deferred.append(hit)
            else:
                yield hit
    yield from deferred


def is_deferred(index: CollectionIndex, passage: int, sentence: int) -> bool:
    """Whether ``passage``, cited by ``sentence``, comes after every other passage: the sentence is a fragment or
    only says where something is shown (a paragraph of its own, "Numbers of PDFs removed by these filters are given
    in Table 8.", before the table's cells), or the passage mostly asks questions
    (:attr:`CollectionIndex.passage_asks`: "What (other) tasks could the dataset be used for? Please provide a
    description." does not say what a dataset is)."""
    kind = int(index.sentence_kind[sentence])
    return not kind & WHOLE or bool(kind & POINTER) or bool(index.passage_asks[passage])


@dataclass(frozen=True)
class Cited:
    """A ranked passage's cited sentence as the library names it, with what the answer needs of it: what each shard
    sends of its best passages, and what rank 0 merges them by (``app.services.shards``): each shard's passages are
    scored as in the whole collection, so the merge of the shards' streams by ``order`` is the collection's ranking."""

    document_id: str  # the document's id in the library (a row of ``CollectionIndex.document_ids``)
    sentence_number: int  # among the document's sentences
    score: float
    order: tuple[bool, bool, float, int, int]  # the ranking's: (deferred, not of a named document, −score, document
    # id, the passage's start in it); equal scores in the index's order (documents by id)
    confident: bool  # an answer whose best passage is this one is confident (:func:`is_confident`)
    held: float  # the share of the question's word weight the passage holds


def cited(
    model: Model, index: CollectionIndex, question: Question, reading: ReadResult | None = None
) -> Iterator[Cited]:
    """:func:`ranked_hits` as the library names them, best first."""
    named = set(question.documents)
    for hit in ranked_hits(model, index, question, reading):
        document = int(index.sentence_document[hit.sentence])
        confident, held = is_confident(model, index, question, hit.passage)
        yield Cited(
            index.document_ids[document],
            int(index.sentence_number[hit.sentence]),
            hit.score,
            (
                hit.deferred,
                question.some_named and document not in named,
                -hit.score,
                int(index.document_ids[document]),
                int(index.passage_spans[hit.passage, 0]),
            ),
            confident,
            held,
        )


def answer(
    model: Model, index: CollectionIndex, question: str | Question, k: int, reading: ReadResult | None = None
) -> list[Hit]:
    """The best ``k`` passages for ``question``, best first, each with its best sentence; ``reading``: the
    question's read of the index (:func:`read`), without which the read term is left out."""
    q = question if isinstance(question, Question) else Question.encode(model, question, index)
    return list(itertools.islice(ranked_hits(model, index, q, reading), k))

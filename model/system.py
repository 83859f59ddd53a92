"""The trained IndexPool model as the evaluation harness runs it: ``qa_system(checkpoint)`` and
``summarizer(checkpoint)`` (see :mod:`model.evaluation.systems`), and the checkpoint format shared with training.

A checkpoint holds an :class:`IndexPoolNet` (the hybrid model and its heads) in float16, its HybridConfig and the
evidence-combination weights. Collections are encoded with the model's streaming prefill; passage and sentence
states are pooled on the fly (weighted means, :class:`TokenPooling`) by a ``SpanAccumulator``, so no token state is
ever kept.

Evidence score of a passage p for a question q (each term z-scored over the corpus' passages):

    match      TokenMatchHead: weighted MaxSim of the question's tokens against p's tokens over the distilled token
               embeddings, plus its document term (see model.hybrid.heads.TokenMatchHead)
    semantic   cos(E_q, E_p)               EvidenceHead over the question's and p's pooled states
    meeting    cos(E_q, mean of E_p' in p's document)   which document (meeting, paper) the question is about
    indexer    share of the question tokens' top-k indexer selections (all layers) that fall inside p:
               the model's own sparse attention choosing where to read, a learned lexical/semantic match

``score = w_match · match + w_sem · semantic + w_doc · meeting + w_idx · indexer``; training fits the weights on
QMSum train meetings it held out of every stage (``model.train.calibrate``). ``evidence="semantic"`` (or the
environment variable ``INDEXPOOL_EVIDENCE=semantic``) drops the indexer term, for ablations.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from model.evaluation.metrics import Span
from model.evaluation.passages import sentence_spans, split_passages
from model.evaluation.systems import Document, Response
from model.hybrid import (
    EvidenceHead,
    HybridConfig,
    HybridModel,
    SalienceHead,
    SpanAccumulator,
    TokenMatchHead,
    span_means,
)
from model.summary_policy import SummaryPolicy, choose, policy_for
from model.tokenizer import Tokenizer, load_tokenizer

FORMAT = "indexpool-checkpoint/1"
TEACHER_DIM = 384
POSITION_BUCKETS = 16
CHUNK_TOKENS = 4096
MAX_QUESTION_TOKENS = 128


@dataclass
class EvidenceWeights:
    match: float = 1.0  # w_match: the token-match term
    semantic: float = 1.0  # w_sem: the pooled-state cosine
    doc: float = 0.5  # w_doc: the document-level semantic prior
    indexer: float = 0.3  # w_idx: the indexer-selection evidence ("hybrid" mode only)
    redundancy: float = 0.8  # summaries: skip a sentence this similar (cosine) to one already chosen


class TokenPooling(nn.Module):
    """Weights of the tokens in a span's pooled state: w_t = exp(log prior[id_t] + g(h_t)).

    The prior is the SIF weight a / (a + p(id)) of the token's training frequency (set by training); g, a learned
    linear function of the token's final state, starts at 0. Every block ends in an RMSNorm, so plain means of final
    states weigh "uh" and "the" like content words; these weights give pooled spans the static SIF emphasis back.
    """

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.register_buffer("log_prior", torch.zeros(cfg.vocab_size))
        self.gate = nn.Linear(cfg.d_model, 1)
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.gate.bias)

    def forward(self, ids: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """ids (..., T), states (..., T, d) → weights (..., T) > 0"""
        return (self.log_prior[ids] + self.gate(states).squeeze(-1)).clamp(-20, 20).exp()


def weighted_spans(states: torch.Tensor, weights: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
    """Weighted span means.  states (T, d), weights (T,), spans (S, 2) → (S, d)"""
    sums = span_means(torch.cat([states * weights[:, None], weights[:, None]], 1), spans)  # (S, d + 1)
    return sums[:, :-1] / sums[:, -1:].clamp_min(1e-12)


def weighted_mean(states: torch.Tensor, weights: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Weighted means of right-padded rows.  states (B, T, d), weights (B, T), lengths (B,) → (B, d)"""
    w = weights * (torch.arange(states.shape[1])[None] < lengths[:, None])  # padding weighs 0
    return (states * w[..., None]).sum(1) / w.sum(1, keepdim=True).clamp_min(1e-12)


class WeightedSpanAccumulator:
    """Weighted span means over streamed chunks (a SpanAccumulator over [w·h, w]); ``add`` is an on_chunk callback
    of a prefill of ``ids``."""

    def __init__(self, pool: TokenPooling, ids: torch.Tensor, spans: torch.Tensor, dim: int) -> None:
        self.pool, self.ids = pool, ids  # ids (T_total,) of the whole stream
        self.acc = SpanAccumulator(spans, dim + 1)

    def add(self, start: int, hidden: torch.Tensor) -> None:
        w = self.pool(self.ids[start : start + hidden.shape[0]], hidden)  # (T,)
        self.acc.add(start, torch.cat([hidden * w[:, None], w[:, None]], 1))

    def means(self) -> torch.Tensor:
        """(S, d)"""
        sums = self.acc.means()
        return sums[:, :-1] / sums[:, -1:].clamp_min(1e-12)


class IndexPoolNet(nn.Module):
    """The hybrid model with its heads, the span pooling weights and the training-only teacher projection."""

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.model = HybridModel(cfg)
        self.pool = TokenPooling(cfg)
        self.evidence = EvidenceHead(cfg.d_model)
        self.salience = SalienceHead(cfg.d_model)
        self.position_prior = nn.Linear(POSITION_BUCKETS, 1)  # salience prior of the relative position
        self.teacher_proj = nn.Linear(cfg.d_model, TEACHER_DIM)  # span mean → teacher embedding (distillation)
        self.match = TokenMatchHead(cfg.embed_dim or cfg.d_model)

    @property
    def cfg(self) -> HybridConfig:
        return self.model.cfg

    def salience_scores(self, means: torch.Tensor) -> torch.Tensor:
        """means (S, d) of a document's sentences in order → salience logits (S,)"""
        rel = torch.arange(means.shape[0], dtype=torch.float32) / max(means.shape[0], 1)
        buckets = F.one_hot((rel * POSITION_BUCKETS).long(), POSITION_BUCKETS).float()  # (S, P)
        return self.salience(means) + self.position_prior(buckets).squeeze(-1)


def save_checkpoint(net: IndexPoolNet, path: Path, evidence: EvidenceWeights, meta: dict) -> str:
    """Write the float16 weights, config and evidence weights; returns the weights hash (set as cfg.weights_id)."""
    state = {k: v.detach().cpu().to(torch.float16) if v.is_floating_point() else v.cpu()
             for k, v in net.state_dict().items()}
    buf = io.BytesIO()
    torch.save(state, buf)
    weights_id = hashlib.sha256(buf.getvalue()).hexdigest()[:12]
    net.cfg.weights_id = weights_id
    payload = {"format": FORMAT, "config": asdict(net.cfg), "state": state, "evidence": asdict(evidence),
               "meta": meta}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    torch.save(payload, tmp)
    tmp.replace(path)
    return weights_id


CACHE_VARIANTS: dict[str, dict] = {  # the same weights with another indexer cache, for side-by-side evaluation
    "int8": {"int8_cache": True},  # IndexPool r = 4 with INT8 pooled keys
    "uncompressed": {"pool_method": "uncompressed"},  # the r = 1 reference indexer
}


def load_checkpoint(path: Path, variant: str = "") -> tuple[IndexPoolNet, EvidenceWeights, dict]:
    """The checkpoint's model; ``variant`` (a key of CACHE_VARIANTS) swaps its indexer cache. The uncompressed
    variant has no pooling weights, so the checkpoint's are left out."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload.get("format") != FORMAT:
        raise ValueError(f"{path}: not an IndexPool checkpoint ({payload.get('format')!r})")
    config = {"indexer_key_window": 1} | payload["config"]  # checkpoints before the field had token keys
    net = IndexPoolNet(HybridConfig.from_dict(config | CACHE_VARIANTS.get(variant, {})))
    expected = net.state_dict()
    state = {k: v.float() if v.is_floating_point() else v for k, v in payload["state"].items() if k in expected}
    net.load_state_dict(state)
    net.eval()
    return net, EvidenceWeights(**payload["evidence"]), payload["meta"]


@dataclass
class PassageTokens:
    """The passages of a collection as flat distinct token ids, what TokenMatchHead.match reads, and the collection's
    piece statistics."""

    token_ids: torch.Tensor  # (N,) distinct ids of each passage, passages in order
    owner: torch.Tensor  # (N,) passage of each entry
    lengths: torch.Tensor  # (P,) tokens of each passage
    idf: torch.Tensor  # (V,) log(1 + (P - df + 0.5) / (df + 0.5)), df = passages holding the piece

    @classmethod
    def build(cls, passages: Sequence[np.ndarray], vocab_size: int) -> PassageTokens:
        distinct = [np.unique(ids) for ids in passages]
        token_ids = np.concatenate(distinct + [np.zeros(0, np.int64)]).astype(np.int64)
        owner = np.repeat(np.arange(len(passages)), [len(d) for d in distinct])
        df = np.bincount(token_ids, minlength=vocab_size)
        idf = np.log1p((len(passages) - df + 0.5) / (df + 0.5))
        return cls(torch.as_tensor(token_ids), torch.as_tensor(owner, dtype=torch.int64),
                   torch.as_tensor([len(ids) for ids in passages], dtype=torch.int64),
                   torch.as_tensor(idf, dtype=torch.float32))

    def select(self, rows: np.ndarray) -> PassageTokens:
        """The passages ``rows`` (in that order), same statistics."""
        owner = self.owner.numpy()
        first, last = np.searchsorted(owner, rows, "left"), np.searchsorted(owner, rows, "right")
        entries = torch.as_tensor(np.concatenate([np.arange(a, b) for a, b in zip(first, last, strict=True)]))
        new_owner = torch.as_tensor(np.repeat(np.arange(len(rows)), last - first))
        return PassageTokens(self.token_ids[entries], new_owner, self.lengths[torch.as_tensor(rows)], self.idf)


def match_scores(net: IndexPoolNet, question: torch.Tensor, passages: PassageTokens,
                 keys: torch.Tensor | None = None) -> torch.Tensor:
    """TokenMatchHead MaxSim of question ids (Tq,) against ``passages`` → (P,); ``keys`` the head's vocabulary keys
    when already computed."""
    embeddings = net.model.embed.weight  # (V, e)
    keys = net.match.keys(embeddings) if keys is None else keys
    question = question[embeddings[question].norm(dim=-1) > 0]  # pieces without text carry no meaning
    if question.numel() == 0:
        return torch.zeros(passages.lengths.shape[0])
    similarity = keys[question] @ keys.T  # (Tq, V)
    weights = net.match.question_weights(question, embeddings, passages.idf, net.pool.log_prior)
    return net.match.match(similarity, weights, passages.token_ids, passages.owner, passages.lengths)


def char_to_token_spans(starts: np.ndarray, spans: Sequence[tuple[int, int]], offset: int) -> np.ndarray:
    """Character spans → token spans [first token starting at/after start, first token starting at/after end),
    shifted by ``offset`` tokens.  starts (T,) token start characters → (S, 2) int64"""
    chars = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    return np.searchsorted(starts, chars, side="left").astype(np.int64) + offset


def encode_spans(net: IndexPoolNet, ids: np.ndarray, spans: np.ndarray) -> torch.Tensor:
    """Weighted mean states of token ``spans`` (S, 2) of one document, by streaming prefill.  → (S, d)"""
    stream = torch.as_tensor(ids, dtype=torch.int64)
    acc = WeightedSpanAccumulator(net.pool, stream, torch.as_tensor(spans), net.cfg.d_model)
    net.model.prefill(stream, CHUNK_TOKENS, on_chunk=acc.add)
    return acc.means()


def _zscore(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / x.std().clamp_min(1e-6) if x.numel() > 1 else x * 0


class _Encoder:
    """Shared inference plumbing: tokenizing with offsets, streaming prefill with span accumulation."""

    def __init__(self, net: IndexPoolNet, weights: EvidenceWeights, tokenizer: Tokenizer | None = None) -> None:
        self.net, self.weights = net, weights
        self.tokenizer = tokenizer or load_tokenizer()

    def question_ids(self, question: str) -> torch.Tensor:
        return torch.as_tensor(self.tokenizer.encode(question)[:MAX_QUESTION_TOKENS], dtype=torch.int64)

    def encode_question(self, ids: torch.Tensor) -> torch.Tensor:
        """The question's ids (Tq,), encoded on their own → unit embedding (e,)."""
        h = self.net.model(ids[None])[0]  # (Tq, d)
        w = self.net.pool(ids, h)  # (Tq,)
        return self.net.evidence.embed_question((h * w[:, None]).sum(0, keepdim=True) / w.sum())


class IndexPoolQA(_Encoder):
    name = "indexpool"

    def __init__(self, net: IndexPoolNet, weights: EvidenceWeights, evidence: str | None = None,
                 one_stream: bool = False) -> None:
        super().__init__(net, weights)
        self.one_stream = one_stream  # encode the corpus as one stream (keeps the state the indexer term reads)
        self.mode = evidence or os.environ.get("INDEXPOOL_EVIDENCE", "hybrid")
        if self.mode not in ("hybrid", "semantic"):
            raise ValueError(f"evidence mode must be 'hybrid' or 'semantic', got {self.mode!r}")

    @torch.no_grad()
    def index(self, documents: Sequence[Document]) -> None:
        """Encode the corpus, accumulating passage and sentence means: each document as its own stream (the cost
        of a prefill grows with the square of its length: the indexer scores every earlier cached entry), or with
        ``one_stream`` all documents in order as one stream, whose state the indexer evidence term reads."""
        self.passages, self.sentences = [], []  # Passage; (char start, char end) of each sentence
        self.sentence_rows: list[list[int]] = []  # per passage: its rows of self.sentences
        pieces, passage_tokens, sentence_tokens, doc_of, passage_ids = [], [], [], [], []
        offset, doc_means = 0, []  # doc_means: per document, its (passage means, sentence means) when encoded alone
        for d, document in enumerate(documents):
            ids, starts, _ = self.tokenizer.encode_offsets(document.text)
            passages = split_passages(document.id, document.text)
            s_spans = []
            for p in passages:
                rows = sentence_spans(document.text, p.start, p.end)
                self.sentence_rows.append(list(range(len(self.sentences), len(self.sentences) + len(rows))))
                self.sentences.extend(rows)
                s_spans.extend(rows)
            self.passages.extend(passages)
            doc_of.extend([d] * len(passages))
            p_tokens = char_to_token_spans(starts, [(p.start, p.end) for p in passages], 0)
            passage_ids.extend(ids[a:b] for a, b in p_tokens)
            passage_tokens.append(p_tokens + offset)
            sentence_tokens.append(char_to_token_spans(starts, s_spans, offset))
            if not self.one_stream:
                spans = np.concatenate([p_tokens, char_to_token_spans(starts, s_spans, 0), np.zeros((0, 2), np.int64)])
                width = self.net.cfg.d_model
                means = encode_spans(self.net, ids, spans) if len(ids) else torch.zeros(len(spans), width)
                doc_means.append((means[: len(passages)], means[len(passages) :]))
            pieces.append(ids)
            offset += len(ids)
        n_passages = len(self.passages)
        all_spans = torch.as_tensor(np.concatenate(passage_tokens + sentence_tokens + [np.zeros((0, 2), np.int64)]))
        self.state = None
        if self.one_stream:
            stream = torch.as_tensor(np.concatenate(pieces + [np.zeros(0, np.int32)]), dtype=torch.int64)
            acc = WeightedSpanAccumulator(self.net.pool, stream, all_spans, self.net.cfg.d_model)  # passages, sentences
            self.state = self.net.model.prefill(stream, CHUNK_TOKENS, on_chunk=acc.add)
            means = acc.means()  # (P + S, d)
        else:
            empty = torch.zeros(0, self.net.cfg.d_model)
            means = torch.cat([m for m, _ in doc_means] + [m for _, m in doc_means] + [empty])  # (P + S, d)
        emb = self.net.evidence.embed_spans(means)  # (P + S, e) unit
        self.passage_emb, self.sentence_emb = emb[:n_passages], emb[n_passages:]
        self.passage_tokens = all_spans[:n_passages]  # (P, 2)
        doc_of_t = torch.as_tensor(doc_of, dtype=torch.int64)
        self.doc_of, self.n_documents = doc_of_t, len(documents)
        self.passage_ids = PassageTokens.build(passage_ids, self.net.cfg.vocab_size)
        self.vocab_keys = self.net.match.keys(self.net.model.embed.weight)  # (V, e)
        docs = torch.zeros(len(documents), emb.shape[1]).index_add_(0, doc_of_t, self.passage_emb)
        self.doc_emb = F.normalize(docs, dim=-1)[doc_of_t]  # (P, e) each passage's document embedding

    def indexer_evidence(self, ids: torch.Tensor) -> torch.Tensor:
        """Share of the question tokens' scored indexer selections (all layers) inside each passage, each token
        counted with its pooling weight (what it contributes to the question's meaning).  → (P,)"""
        out = self.net.model.query(ids, self.state)
        token_w = self.net.pool(ids, out.hidden)  # (Tq,)
        token_w = token_w / token_w.sum()
        starts = self.passage_tokens[:, 0].contiguous()
        evidence = torch.zeros(len(self.passages))
        for sel in out.selections:
            ok = sel.lengths > 0  # (Tq, m)
            p = (torch.searchsorted(starts, sel.starts[ok], right=True) - 1).clamp_min(0)
            inside = sel.starts[ok] < self.passage_tokens[p, 1]
            share = token_w[:, None] * sel.lengths.float() / sel.lengths.sum(1, keepdim=True).clamp_min(1)
            evidence.index_add_(0, p[inside], share[ok][inside])
        return evidence

    @torch.no_grad()
    def components(self, question: str, indexer: bool) -> dict[str, torch.Tensor]:
        """The z-scored terms of the evidence score of every passage: semantic, doc [, indexer].  → {name: (P,)}"""
        ids = self.question_ids(question)
        q = self.encode_question(ids)  # (e,)
        match = match_scores(self.net, ids, self.passage_ids, self.vocab_keys)
        terms = {"match": _zscore(self.net.match.logits(match, self.doc_of, self.n_documents)),
                 "semantic": _zscore(self.passage_emb @ q), "doc": _zscore(self.doc_emb @ q)}
        if indexer:
            evidence = self.indexer_evidence(ids) if self.state is not None else torch.zeros(len(self.passages))
            terms["indexer"] = _zscore(evidence)
        return terms

    def scores(self, question: str) -> torch.Tensor:
        """Evidence score of every passage.  → (P,)"""
        return self.combine(self.components(question, self.mode == "hybrid" and self.weights.indexer != 0))

    def combine(self, terms: dict[str, torch.Tensor]) -> torch.Tensor:
        """The evidence score from the terms of :meth:`components` (the indexer term when present).  → (P,)"""
        w = self.weights
        score = w.match * terms["match"] + w.semantic * terms["semantic"] + w.doc * terms["doc"]
        return score + w.indexer * terms["indexer"] if "indexer" in terms else score

    @torch.no_grad()
    def best_sentence(self, ids: torch.Tensor, question: torch.Tensor, passage: int) -> tuple[int, int]:
        """Character span of the sentence of ``passage`` that best answers the question (ids (Tq,), unit embedding
        question (e,)): the evidence score's match and semantic terms over the passage's sentences. The passage
        itself when it has no sentence."""
        rows = self.sentence_rows[passage]
        p = self.passages[passage]
        if not rows:
            return p.start, p.end
        texts = [p.text[s - p.start : e - p.start] for s, e in (self.sentences[i] for i in rows)]
        sentences = PassageTokens.build(self.tokenizer.encode_batch(texts), self.net.cfg.vocab_size)
        sentences.idf = self.passage_ids.idf  # the collection's statistics, not the passage's
        match = match_scores(self.net, ids, sentences, self.vocab_keys)
        semantic = self.sentence_emb[rows] @ question
        score = self.weights.match * _zscore(match) + self.weights.semantic * _zscore(semantic)
        return self.sentences[rows[int(score.argmax())]]

    @torch.no_grad()
    def ask(self, question: str, k: int) -> Response:
        if not self.passages:
            return Response([], "")
        score = self.scores(question)
        order = score.topk(min(k, len(self.passages))).indices.tolist()
        ids = self.question_ids(question)
        s, e = self.best_sentence(ids, self.encode_question(ids), order[0])
        passage = self.passages[order[0]]
        answer = passage.text[s - passage.start : e - passage.start]
        cited = [Span(self.passages[i].doc, self.passages[i].start, self.passages[i].end) for i in order]
        return Response(cited, answer)


class IndexPoolSummarizer(_Encoder):
    """Summaries by the salience head, the sentence embeddings and a summary policy (:mod:`model.summary_policy`:
    how the scores are combined and how sentences are taken within the budget)."""

    name = "indexpool"

    def __init__(self, net: IndexPoolNet, weights: EvidenceWeights, policy: SummaryPolicy | None = None,
                 tokenizer: Tokenizer | None = None) -> None:
        super().__init__(net, weights, tokenizer)
        self.policy = policy or SummaryPolicy()

    @torch.no_grad()
    def sentence_states(self, text: str) -> tuple[list[tuple[int, int]], torch.Tensor]:
        """Sentence character spans and their mean states (S, d), by streaming prefill."""
        ids, starts, _ = self.tokenizer.encode_offsets(text)
        spans = sentence_spans(text)
        return spans, encode_spans(self.net, ids, char_to_token_spans(starts, spans, 0))

    @torch.no_grad()
    def sentence_scores(self, text: str) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
        """Sentence spans, salience logits (S,) and unit embeddings (S, e): what the policy reads."""
        spans, means = self.sentence_states(text)
        if not spans:
            return spans, np.zeros(0), np.zeros((0, 0))
        return spans, self.net.salience_scores(means).numpy(), self.net.evidence.embed_spans(means).numpy()

    @torch.no_grad()
    def summarize(self, text: str, budget_words: int) -> str:
        """The sentences the policy chooses within the budget, near-duplicates skipped, in reading order."""
        spans, salience, emb = self.sentence_scores(text)
        chosen = choose(self.policy, text, spans, salience, emb, budget_words, self.weights.redundancy)
        return "\n".join(" ".join(text[spans[i][0] : spans[i][1]].split()) for i in chosen)


def qa_system(checkpoint: Path, variant: str = "") -> IndexPoolQA:
    net, weights, _ = load_checkpoint(checkpoint, variant)
    qa = IndexPoolQA(net, weights)
    qa.name = f"indexpool-{variant}" if variant else "indexpool"
    return qa


def summarizer(checkpoint: Path) -> IndexPoolSummarizer:
    """The checkpoint's summarizer with its summary policy (:func:`model.summary_policy.policy_for`)."""
    net, weights, _ = load_checkpoint(checkpoint)
    return IndexPoolSummarizer(net, weights, policy_for(checkpoint, net.cfg.weights_id))

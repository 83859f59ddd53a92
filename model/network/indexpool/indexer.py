"""The IndexPool indexer: a streaming indexer key cache with block selection.

    idx = IndexPoolIndexer(IndexPoolConfig(), method="indexpool")
    idx.append(keys, queries, head_weights)          # keys (T, D), queries (T, H, D), head_weights (T, H)
    sel = idx.select(q, w, k_tokens=2048)            # q (Tq, H, D), w (Tq, H)
    sel.tokens(0)                                    # token ids chosen for query 0 (sink + scored + local)

Scores are Σ_h w_{t,h} ReLU(q_{t,h} · k) over tier-1 entries. Methods (all in the same code, equal memory):
    uncompressed  every key is an entry (upper bound);
    indexpool     r keys → one weighted-pooled entry (pooling.py), optionally INT8 (+ Hadamard) and adaptive r;
    mean_pool     r keys → their mean (MoBA / NSA style);
    static        r keys → static learned per-slot weights;
    quest         blocks of ``quest_block`` keys → per-dim min and max; the score uses the upper bound
                  max(q·min, q·max) per dim, i.e. the indexer op on keys [max; min] with queries [ReLU(q); min(q, 0)].
The first ``sink_tokens`` and the last ``local_tokens`` are always selected and not scored; top-k is counted in
tokens (an entry of r keys covers r tokens). Below ``min_length`` tokens every method scores the full keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn

from kernels.indexer_topk import indexer_topk
from kernels.pooling import quantize_int8, weighted_pool

from .config import METHODS, IndexPoolConfig
from .monitor import CallRecord
from .pooling import (
    MeanPoolingWeights,
    PoolingWeights,
    StaticPoolingWeights,
    adaptive_keep,
    weight_entropy,
    write_queries,
)
from .quant import hadamard


def cache_bytes(cfg: IndexPoolConfig, tokens: int, method: str = "indexpool") -> int:
    """Bytes of the indexer cache (tier 1) of a ``tokens``-token stream, as ``IndexPoolIndexer.cache_bytes`` counts
    them (without adaptive ratios): float32 keys of ``head_dim``; compressed, one entry per block (INT8 rows with a
    float16 scale when ``cfg.int8``; Quest's [max; min] rows) plus the keys of the unfinished block; below
    ``min_length`` tokens nothing is compressed."""
    key_bytes = cfg.head_dim * 4
    if method == "uncompressed" or tokens < cfg.min_length:
        return tokens * key_bytes
    block = cfg.quest_block if method == "quest" else cfg.ratio
    if method == "quest":
        entry_bytes = 2 * key_bytes
    else:
        entry_bytes = cfg.head_dim + 2 if cfg.int8 else key_bytes
    return tokens // block * entry_bytes + tokens % block * key_bytes


class _Rows:
    """Growable row buffer (amortized O(1) appends)."""

    def __init__(self, width: int | None, dtype: torch.dtype, device: torch.device) -> None:
        shape = (0, width) if width is not None else (0,)
        self.buf, self.n = torch.empty(shape, dtype=dtype, device=device), 0

    def append(self, rows: torch.Tensor) -> None:
        need = self.n + rows.shape[0]
        if need > self.buf.shape[0]:
            shape = (max(need, 2 * self.buf.shape[0]),) + self.buf.shape[1:]
            grown = torch.empty(shape, dtype=self.buf.dtype, device=self.buf.device)
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : need] = rows
        self.n = need

    @property
    def data(self) -> torch.Tensor:
        return self.buf[: self.n]

    @property
    def nbytes(self) -> int:
        return self.data.numel() * self.data.element_size()


@dataclass(frozen=True)
class Entries:
    """Tier-1 entries: entry i covers tokens [starts[i], starts[i] + lengths[i])."""

    rows: torch.Tensor  # (N, D') float, or int8 codes
    scales: torch.Tensor | None  # (N,) float16 INT8 scales
    starts: torch.Tensor  # (N,) int64
    lengths: torch.Tensor  # (N,) int64


@dataclass
class Selection:
    """Selected token ranges per query: scored entries (starts, lengths) plus the always-selected ranges."""

    starts: torch.Tensor  # (Tq, m) first token of each selected entry
    lengths: torch.Tensor  # (Tq, m) tokens covered by each entry (0 = padding)
    forced: list[tuple[int, int]]  # [lo, hi) token ranges always selected (sink, local window)

    def scored_tokens(self, t: int) -> torch.Tensor:
        """Token ids covered by query t's scored entries.  # (n,)"""
        s, n = self.starts[t], self.lengths[t].long()
        offs = torch.arange(int(n.max()) if n.numel() else 0, device=s.device)  # (max_len,)
        ids = s[:, None] + offs[None, :]  # (m, max_len)
        return ids[offs[None, :] < n[:, None]]

    def tokens(self, t: int) -> torch.Tensor:
        forced = [torch.arange(lo, hi, device=self.starts.device) for lo, hi in self.forced]
        return torch.unique(torch.cat([self.scored_tokens(t), *forced]))


class IndexPoolIndexer(nn.Module):
    def __init__(
        self,
        cfg: IndexPoolConfig,
        method: str = "indexpool",
        weights: nn.Module | None = None,
        backend: str = "auto",
        device: str | torch.device = "cpu",
    ) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.cfg, self.method, self.backend = cfg, method, backend
        r = cfg.ratio
        if weights is None:
            weights = {
                "indexpool": lambda: PoolingWeights(cfg),
                "mean_pool": lambda: MeanPoolingWeights(r),
                "static": lambda: StaticPoolingWeights(r),
            }.get(method, lambda: None)()
        self.device = torch.device(device)
        self.weights = weights.to(self.device) if weights is not None else None
        self.block = cfg.quest_block if method == "quest" else (1 if method == "uncompressed" else r)
        self.int8 = cfg.int8 and method not in ("uncompressed", "quest")
        self.rotation = hadamard(cfg.head_dim, self.device) if self.int8 and cfg.hadamard else None
        D = cfg.head_dim
        dev = self.device
        self.keys = _Rows(D, torch.float32, dev)  # full-resolution indexer keys (tier 3 of the indexer)
        self.u = _Rows(D, torch.float32, dev)  # write-time content queries of blocks not yet pooled
        width = 2 * D if method == "quest" else D
        self.t1 = _Rows(width, torch.int8 if self.int8 else torch.float32, dev)  # tier 1 entries
        self.t1_scale = _Rows(None, torch.float16, dev)
        self.t1_start = _Rows(None, torch.int64, dev)
        self.t1_len = _Rows(None, torch.int64, dev)
        self.pooled_blocks = 0  # blocks already written to tier 1
        self.finished = False  # ``finish``: the unfinished block's keys are entries too
        self.entropy_sum, self.entropy_n = 0.0, 0
        self.record = CallRecord()

    @property
    def length(self) -> int:
        return self.keys.n

    @property
    def compressed(self) -> bool:
        return self.method != "uncompressed" and self.length >= self.cfg.min_length

    # ---------------------------------------------------------------- write path
    @torch.no_grad()
    def append(
        self,
        keys: torch.Tensor,
        queries: torch.Tensor | None = None,
        head_weights: torch.Tensor | None = None,
    ) -> None:
        """New tokens' indexer keys (T, D) and, for content_query='last_query', their queries (T, H, D) and head
        weights (T, H). Completed blocks are pooled once, with what exists now, and never rewritten."""
        if self.finished:
            raise ValueError("the stream was finished: nothing can be appended")
        L0, b = self.length, self.block
        self.keys.append(keys.detach().float().to(self.device))
        if self.method == "uncompressed":
            return
        nb_old, nb_new = L0 // b, self.length // b
        if self.method == "indexpool" and nb_new > nb_old:  # content queries of blocks completed now
            last = torch.arange(nb_old, nb_new) * b + b - 1 - L0  # (n,) last tokens, local to this call
            blocks = self.keys.data[nb_old * b : nb_new * b].reshape(-1, b, keys.shape[1])
            lq = queries[last.to(queries.device)].to(self.device) if queries is not None else None
            lw = head_weights[last.to(head_weights.device)].to(self.device) if head_weights is not None else None
            self.u.append(write_queries(blocks, lq, lw, self.cfg.content_query))
        if self.compressed:
            self._write_blocks(nb_new)

    def _write_blocks(self, nb_new: int) -> None:
        t0 = time.perf_counter()
        b, D, lo = self.block, self.cfg.head_dim, self.pooled_blocks
        blocks = self.keys.data[lo * b : nb_new * b].reshape(-1, b, D)  # (n, b, D)
        starts = torch.arange(lo, nb_new, device=self.device) * b
        if self.method == "quest":
            self._append_t1(torch.cat([blocks.amax(1), blocks.amin(1)], dim=1), None, starts, b)
        else:
            u = self.u.data[: nb_new - lo] if self.method == "indexpool" else None
            w = self.weights(blocks, u)  # (n, b)
            self.entropy_sum += weight_entropy(w, b) * w.shape[0]
            self.entropy_n += w.shape[0]
            keep = adaptive_keep(blocks, self.cfg.adaptive_threshold) if self.cfg.adaptive else None
            self._pool_and_append(blocks, w, starts, keep)
            if self.method == "indexpool":
                self.u = _Rows(D, torch.float32, self.device)
        self.pooled_blocks = nb_new
        self.record.pooling_ms = (time.perf_counter() - t0) * 1e3

    def _pool_and_append(
        self, blocks: torch.Tensor, w: torch.Tensor, starts: torch.Tensor, keep: torch.Tensor | None
    ) -> None:
        b, D = self.block, blocks.shape[-1]
        flat_k, flat_w = blocks.reshape(-1, D), w.reshape(-1).float()
        if keep is None or not bool(keep.any()):
            if self.int8:
                q, s = weighted_pool(flat_k, flat_w, b, quantize=True, rotation=self.rotation, backend=self.backend)
                self._append_t1(q, s, starts, b)
            else:
                self._append_t1(weighted_pool(flat_k, flat_w, b, backend=self.backend), None, starts, b)
            return
        pooled = weighted_pool(flat_k, flat_w, b, backend=self.backend)  # (n, D)
        n_rows = torch.where(keep, b, 1)  # rows each block writes
        offs = torch.cumsum(n_rows, 0) - n_rows
        rows = torch.empty(int(n_rows.sum()), D, device=self.device)
        row_start = torch.empty(rows.shape[0], dtype=torch.int64, device=self.device)
        row_len = torch.ones(rows.shape[0], dtype=torch.int64, device=self.device)
        rows[offs[~keep]] = pooled[~keep]
        row_start[offs[~keep]] = starts[~keep]
        row_len[offs[~keep]] = b
        slot = torch.arange(b, device=self.device)
        kept = (offs[keep][:, None] + slot).reshape(-1)  # (n_keep·b,)
        rows[kept] = blocks[keep].reshape(-1, D)
        row_start[kept] = (starts[keep][:, None] + slot).reshape(-1)
        if self.int8:
            q, s = quantize_int8(rows, self.rotation)
            self._append_rows(q, s, row_start, row_len)
        else:
            self._append_rows(rows, None, row_start, row_len)

    def _append_t1(self, rows: torch.Tensor, scales: torch.Tensor | None, starts: torch.Tensor, b: int) -> None:
        self._append_rows(rows, scales, starts, torch.full_like(starts, b))

    def _append_rows(
        self, rows: torch.Tensor, scales: torch.Tensor | None, starts: torch.Tensor, lengths: torch.Tensor
    ) -> None:
        self.t1.append(rows)
        if scales is not None:
            self.t1_scale.append(scales)
        self.t1_start.append(starts)
        self.t1_len.append(lengths)

    def finish(self) -> None:
        """End of the stream: the keys of its unfinished block become entries of one token each (INT8 when the
        entries are), so that the entries cover every token. Nothing may be appended after."""
        if not self.compressed or self.finished:
            return
        lo = self.pooled_blocks * self.block
        rest = self.keys.data[lo:]  # (n, D)
        if rest.shape[0] == 0:
            return
        if self.method == "quest":
            rows, scales = torch.cat([rest, rest], dim=1), None
        elif self.int8:
            rows, scales = quantize_int8(rest, self.rotation)
        else:
            rows, scales = rest, None
        starts = torch.arange(lo, self.length, device=self.device)
        self._append_rows(rows, scales, starts, torch.ones_like(starts))
        self.finished = True

    # ---------------------------------------------------------------- read path
    def entries(self) -> Entries:
        """The tier-1 entries a query scores: pooled (INT8) rows, or every key when uncompressed."""
        if self.compressed:
            scales = self.t1_scale.data if self.int8 else None
            return Entries(self.t1.data, scales, self.t1_start.data, self.t1_len.data)
        n = self.length
        ones = torch.ones(n, dtype=torch.int64, device=self.device)
        return Entries(self.keys.data, None, torch.arange(n, device=self.device), ones)

    def cache_bytes(self) -> int:
        """Bytes of the indexer cache (tier 1): entries, scales, and the keys not yet pooled."""
        if not self.compressed:
            return self.keys.nbytes
        pending = 0 if self.finished else (self.length - self.pooled_blocks * self.block) * self.cfg.head_dim * 4
        return self.t1.nbytes + self.t1_scale.nbytes + pending

    def query_space(self, q: torch.Tensor) -> torch.Tensor:
        """Queries (..., H, D) in the entries' space: Quest's [ReLU(q); min(q, 0)], or INT8's Hadamard rotation."""
        if self.method == "quest" and self.compressed:
            return torch.cat([q.relu(), q.clamp(max=0)], dim=-1)  # (Tq, H, 2D)
        if self.rotation is not None and self.compressed:
            return q @ self.rotation
        return q

    @torch.no_grad()
    def select(self, q: torch.Tensor, w: torch.Tensor, k_tokens: int) -> Selection:
        """q (Tq, H, D), w (Tq, H) → Selection covering ≈ k_tokens scored tokens per query (+ sink, local)."""
        cfg, L = self.cfg, self.length
        lo, hi = min(cfg.sink_tokens, L), max(L - cfg.local_tokens, min(cfg.sink_tokens, L))
        Tq = q.shape[0]
        if self.compressed:
            starts, lens = self.t1_start.data, self.t1_len.data
            e0 = int(torch.searchsorted(starts, lo))
            e1 = int(torch.searchsorted(starts + lens, hi, right=True))
            rows = self.t1.data[e0:e1]
            scales = self.t1_scale.data[e0:e1] if self.int8 else None
            hi = int(starts[e1 - 1] + lens[e1 - 1]) if e1 > e0 else lo
        else:
            e0, e1 = lo, hi
            rows, scales, starts, lens = self.keys.data[lo:hi], None, None, None
        t0 = time.perf_counter()
        n_entries = e1 - e0
        min_len = 1 if (lens is None or self.cfg.adaptive) else self.block
        m = min(n_entries, -(-k_tokens // min_len))
        if m == 0:
            empty = torch.zeros(Tq, 0, dtype=torch.int64, device=self.device)
            return Selection(empty, empty, [(0, lo), (hi, L)])
        q, w = q.to(self.device), w.to(self.device)
        _, idx = indexer_topk(self.query_space(q), w, rows, m, scales=scales, backend=self.backend)  # (Tq, m)
        t1 = time.perf_counter()
        if starts is None:
            sel_start, sel_len = idx + lo, torch.ones_like(idx)
        else:
            sel_start, sel_len = starts[idx + e0], lens[idx + e0]
            if self.cfg.adaptive:  # keep the best entries until k tokens are covered
                before = torch.cumsum(sel_len, 1) - sel_len
                sel_len = torch.where(before < k_tokens, sel_len, torch.zeros_like(sel_len))
        self.record.scoring_ms = (t1 - t0) * 1e3
        self.record.topk_ms = (time.perf_counter() - t1) * 1e3
        return Selection(sel_start, sel_len, [(0, lo), (hi, L)])

    @torch.no_grad()
    def select_blocks(
        self, q: torch.Tensor, w: torch.Tensor, bounds: torch.Tensor, sink: int, k_tokens: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Top entries for G query blocks at once, block g among the entries inside [sink, bounds[g]) (the causal
        selection of a prefill), ties to the older entries, with the ``kernels.indexer_topk`` op.
        q (G, H, D), w (G, H) → (starts (G, m), lengths (G, m)), length 0 = no entry; k_tokens = -1 selects all."""
        e = self.entries()
        G = q.shape[0]
        e0 = int(torch.searchsorted(e.starts, sink))
        e_end = torch.searchsorted(e.starts + e.lengths, bounds, right=True).clamp_min(e0)  # (G,) [e0, e_end)
        e1 = int(e_end.max()) if G else e0
        m = e1 - e0 if k_tokens < 0 else min(e1 - e0, -(-k_tokens // self.block))
        if m == 0:
            empty = torch.zeros(G, 0, dtype=torch.int64)
            return empty, empty
        scales = e.scales[e0:e1] if e.scales is not None else None
        values, picked = indexer_topk(
            self.query_space(q), w, e.rows[e0:e1], m, scales=scales, limits=e_end - e0, backend=self.backend
        )
        ok = torch.isfinite(values)
        picked = picked + e0
        return torch.where(ok, e.starts[picked], 0), torch.where(ok, e.lengths[picked], 0)

    def monitor(self) -> CallRecord:
        """The per-call record, with the current cache state filled in."""
        rec = self.record
        rec.tier1_bytes = self.cache_bytes()
        rec.weight_entropy = self.entropy_sum / self.entropy_n if self.entropy_n else 1.0
        pooled_tokens = self.pooled_blocks * self.block
        rec.average_ratio = pooled_tokens / self.t1.n if self.compressed and self.t1.n else 1.0
        return rec

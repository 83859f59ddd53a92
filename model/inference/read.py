"""The question-time read over stored documents: their caches, a selection's join of them, and the evidence it gives.

    store = DocumentStore.of(state)                        # after a recording prefill of one document
    entries = DocumentEntries.pool(store, config, model)   # its tier 1 under a CacheConfig (the user's settings)
    cache = ReadCache.join(model, [(key, store, entries), ...], config, tiers)   # the documents of a question
    result = read_passages(model, index, cache, question_ids)    # attention mass per passage, bytes, hits, timings

Per document and sparse layer a :class:`DocumentStore` keeps every token's key and value and its indexer key and
write-time content query (float16; tier 3, memory-mapped by the app: the pages a read touched are handed back to the
operating system after it (:meth:`DocumentStore.release`), so the process holds tier 1, tier 2 and what the question
uses, never the store; the OS page cache may keep the file's pages, as it keeps any file's).
:class:`DocumentEntries` are its tier-1 entries: the indexer keys pooled r:1 by the configured method (IndexPool
with the configured α, β, γ; INT8 by default), computed from the store, so a new configuration re-pools without
running the model. A selection's :class:`ReadCache` joins its documents' entries (token positions offset per
document) and serves the model's read (``HybridModel.read``): each question token scores every entry with
``kernels.indexer_topk`` and keeps its best, whose keys and values come through the tiers (``KVTiers``). Below
``CacheConfig.min_tokens`` tokens nothing is compressed: the read scores every token's indexer key.
"""

from __future__ import annotations

import mmap
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from kernels.indexer_topk import indexer_topk
from model.network.checkpoint import Model
from model.network.hybrid import CollectionState
from model.network.indexpool import IndexPoolConfig, IndexPoolIndexer
from model.network.indexpool.cache import KVTiers, TierStats
from model.network.indexpool.config import METHODS, PRESETS

MIN_TOKENS = 10_000  # the seed: below this many tokens, compression is off


@dataclass(frozen=True)
class CacheConfig:
    """How a collection's tier 1 is built: the Settings tab's IndexPool preset, α, β, γ, ratio and INT8."""

    method: str = "indexpool"  # one of METHODS ("uncompressed": every indexer key, r = 1)
    ratio: int = 4  # r tokens per pooled entry
    int8: bool = True  # INT8 entries (Hadamard-rotated, float16 scales)
    preset: str = "default"  # PRESETS: σ, λ and whether the ratio adapts; α, β, γ when not given
    alpha: float | None = None  # pooling weights (None: the preset's)
    beta: float | None = None
    gamma: float | None = None
    min_tokens: int = MIN_TOKENS  # a selection of fewer tokens reads uncompressed indexer keys

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; expected one of {sorted(PRESETS)}")

    def indexpool(self, model: Model) -> IndexPoolConfig:
        """The indexer settings for ``model``'s indexer sizes (compression always on: the selection decides)."""
        weights = {
            k: v for k, v in (("alpha", self.alpha), ("beta", self.beta), ("gamma", self.gamma)) if v is not None
        }
        cfg = model.net.cfg
        return IndexPoolConfig.preset(
            self.preset,
            n_heads=cfg.indexer_heads,
            head_dim=cfg.indexer_dim,
            ratio=self.ratio,
            int8=self.int8,
            min_length=0,
            sink_tokens=0,
            local_tokens=0,
            **weights,
        )


@dataclass
class DocumentStore:
    """Tier 3 of one document: per sparse layer, each token's key/value and indexer key/content query."""

    kv: np.ndarray  # (layers, L, 2, Hkv, D) float16
    keys: np.ndarray  # (layers, L, 2, d_I) float16: [indexer key, write-time content query]

    @classmethod
    def of(cls, state: CollectionState) -> DocumentStore:
        """The store of a prefill that recorded (``HybridModel.prefill(..., record=True)``)."""
        if any(cache.read_keys is None for cache in state.sparse):
            raise ValueError("the prefill did not record what a read needs (prefill(..., record=True))")
        kv = np.stack([cache.kv.data.half().numpy() for cache in state.sparse])
        keys = np.stack([cache.read_keys.data.numpy() for cache in state.sparse])
        return cls(kv, keys)

    @property
    def tokens(self) -> int:
        return self.kv.shape[1]

    def release(self) -> None:
        """Unmap the pages of a memory-mapped store from this process (MADV_DONTNEED; a later read maps them again
        from the file, or from the page cache); nothing for a store in memory."""
        for array in (self.kv, self.keys):
            if isinstance(array.base, mmap.mmap):
                array.base.madvise(mmap.MADV_DONTNEED)

    @property
    def nbytes(self) -> int:
        return self.kv.nbytes + self.keys.nbytes


@dataclass
class DocumentEntries:
    """Tier 1 of one document under one CacheConfig: per layer, pooled indexer entries."""

    rows: list[torch.Tensor]  # per layer (N, D') float32, or int8 codes
    scales: list[torch.Tensor | None]  # per layer (N,) float16 INT8 scales
    starts: list[torch.Tensor]  # per layer (N,) int64 first token
    lengths: list[torch.Tensor]  # per layer (N,) int64 tokens covered

    @classmethod
    @torch.no_grad()
    def pool(cls, store: DocumentStore, config: CacheConfig, model: Model) -> DocumentEntries:
        rows, scales, starts, lengths = [], [], [], []
        for layer in range(store.keys.shape[0]):
            keys = torch.from_numpy(np.asarray(store.keys[layer], dtype=np.float32))  # (L, 2, d_I)
            indexer = IndexPoolIndexer(config.indexpool(model), method=config.method)
            if keys.shape[0]:
                content = keys[:, 1, None, :]  # (L, 1, d_I): the block's last token's content query
                indexer.append(keys[:, 0], content, torch.ones(keys.shape[0], 1))
            indexer.finish()
            e = indexer.entries()
            rows.append(e.rows.clone())
            scales.append(None if e.scales is None else e.scales.clone())
            starts.append(e.starts.clone())
            lengths.append(e.lengths.clone())
        store.release()
        return cls(rows, scales, starts, lengths)

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {}
        for i in range(len(self.rows)):
            arrays[f"rows{i}"] = self.rows[i].numpy()
            arrays[f"starts{i}"] = self.starts[i].numpy()
            arrays[f"lengths{i}"] = self.lengths[i].numpy()
            if self.scales[i] is not None:
                arrays[f"scales{i}"] = self.scales[i].numpy()
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], layers: int) -> DocumentEntries:
        """ValueError when incomplete."""
        try:
            return cls(
                [torch.from_numpy(arrays[f"rows{i}"]) for i in range(layers)],
                [torch.from_numpy(arrays[f"scales{i}"]) if f"scales{i}" in arrays else None for i in range(layers)],
                [torch.from_numpy(arrays[f"starts{i}"]) for i in range(layers)],
                [torch.from_numpy(arrays[f"lengths{i}"]) for i in range(layers)],
            )
        except KeyError as error:
            raise ValueError(f"stored entries lack {error}") from error

    @property
    def nbytes(self) -> int:
        """Bytes of the entries a read scores (rows and scales)."""
        total = sum(r.numel() * r.element_size() for r in self.rows)
        return total + sum(s.numel() * s.element_size() for s in self.scales if s is not None)


class ReadCache:
    """The documents of a question, joined: per layer their tier-1 entries (positions offset per document) in
    front of their tier-3 stores, through shared tiers. ``layer(i)`` is what ``HybridModel.read`` reads."""

    def __init__(
        self,
        model: Model,
        documents: Sequence[tuple[Hashable, DocumentStore, DocumentEntries | None]],
        config: CacheConfig,
        tiers: KVTiers,
        backend: str = "auto",
    ) -> None:
        """``backend``: of the ``kernels.indexer_topk`` op ("auto": Triton on CUDA tensors, else the CPU path)."""
        self.backend = backend
        self.keys = [key for key, _, _ in documents]
        self.stores = [store for _, store, _ in documents]
        self.touched: set[int] = set()  # the documents whose stores a read fetched from since the last release
        self.tiers, self.config = tiers, config
        lengths = [store.tokens for store in self.stores]
        self.offsets = np.cumsum([0, *lengths])  # (D + 1,) first position of each document
        self.compressed = config.method != "uncompressed" and self.tokens >= config.min_tokens
        icfg = config.indexpool(model)
        self.template = IndexPoolIndexer(icfg, method=config.method if self.compressed else "uncompressed")
        layers = model.net.cfg.n_layers
        self.entries = [self._join(layer, [e for _, _, e in documents]) for layer in range(layers)]
        for store in self.stores:  # an uncompressed join read every indexer key
            store.release()

    def release(self) -> None:
        """Hand back the pages of the stores read since the last release (:meth:`DocumentStore.release`)."""
        touched, self.touched = self.touched, set()  # a read running beside this one records into the new set
        for d in touched:
            self.stores[d].release()

    @property
    def tokens(self) -> int:
        return int(self.offsets[-1])

    def _join(self, layer: int, entries: Sequence[DocumentEntries | None]):
        """(rows, scales, starts, lengths) of every document's entries at ``layer``, positions made global."""
        if not self.compressed:  # every token's indexer key
            keys = [torch.from_numpy(np.asarray(s.keys[layer, :, 0], dtype=np.float32)) for s in self.stores]
            rows = torch.cat(keys) if keys else torch.zeros(0, self.template.cfg.head_dim)
            positions = torch.arange(rows.shape[0])
            return rows, None, positions, torch.ones_like(positions)
        if any(e is None for e in entries):
            raise ValueError("compressed reads need every document's entries")
        offsets = self.offsets[:-1].tolist()
        rows = torch.cat([e.rows[layer] for e in entries])
        scales = torch.cat([e.scales[layer] for e in entries]) if self.template.int8 else None
        starts = torch.cat([e.starts[layer] + o for e, o in zip(entries, offsets, strict=True)])
        lengths = torch.cat([e.lengths[layer] for e in entries])
        return rows, scales, starts, lengths

    @property
    def tier1_bytes(self) -> int:
        total = 0
        for rows, scales, _, _ in self.entries:
            total += rows.numel() * rows.element_size() + (0 if scales is None else scales.numel() * 2)
        return total

    def layer(self, index: int) -> CacheLayer:
        return CacheLayer(self, index)


class CacheLayer:
    """One layer of a ReadCache: ``select`` scores its tier-1 entries, ``fetch`` reads keys and values."""

    def __init__(self, cache: ReadCache, index: int) -> None:
        self.cache, self.index = cache, index

    def select(self, q: torch.Tensor, w: torch.Tensor, k_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows, scales, starts, lengths = self.cache.entries[self.index]
        n = rows.shape[0]
        block = self.cache.template.block
        m = n if k_tokens < 0 else min(n, -(-k_tokens // block))
        if m == 0:
            empty = torch.zeros(q.shape[0], 0, dtype=torch.int64)
            return empty, empty
        space = self.cache.template.query_space(q)
        _, picked = indexer_topk(space, w, rows, m, scales=scales, backend=self.cache.backend)  # (Tq, m)
        return starts[picked], lengths[picked]

    def fetch(self, positions: torch.Tensor) -> torch.Tensor:
        cache = self.cache
        document = np.searchsorted(cache.offsets, positions.numpy(), side="right") - 1  # (n,)
        cache.touched.update(np.unique(document).tolist())
        local = positions - torch.from_numpy(cache.offsets[document])
        stores = [store.kv for store in cache.stores]
        return cache.tiers.fetch_many(self.index, cache.keys, stores, torch.from_numpy(document), local)


@dataclass
class ReadResult:
    """A question's read: the mass each passage received, and what it cost."""

    mass: torch.Tensor  # (P,) attention mass per passage, summed over layers, heads (weighted) and question tokens
    tokens_read: int  # distinct collection tokens attended, summed over layers
    tiers: TierStats  # tier-2 hits and misses of this read, bytes read from tier 3
    timings_ms: dict[str, float]  # select (tier-1 scoring and top-k), fetch (tiers 2-3), attend, other (the stack)


@torch.no_grad()
def read_passages(
    model: Model, passage_tokens: torch.Tensor, cache: ReadCache, question_ids: torch.Tensor, k_tokens: int = 0
) -> ReadResult:
    """The question's read over ``cache``; the mass of each passage (``passage_tokens`` (P, 2) its global token span
    [start, end), passages in position order)."""
    started = time.perf_counter()
    before = cache.tiers.stats()
    out = model.net.model.read(question_ids, [cache.layer(i) for i in range(len(cache.entries))], k_tokens)
    cache.release()
    mass = torch.zeros(passage_tokens.shape[0])
    timings = {"select": 0.0, "fetch": 0.0, "attend": 0.0}
    starts = passage_tokens[:, 0].contiguous()
    for layer in out.layers:
        passage = torch.searchsorted(starts, layer.tokens, right=True) - 1  # (n,)
        inside = (passage >= 0) & (layer.tokens < passage_tokens[passage.clamp_min(0), 1])
        mass.index_add_(0, passage[inside], layer.mass[inside])
        for stage, ms in layer.timings_ms.items():
            timings[stage] += ms
    total = (time.perf_counter() - started) * 1e3
    timings["other"] = max(0.0, total - sum(timings.values()))
    tokens = sum(int(layer.tokens.numel()) for layer in out.layers)
    return ReadResult(mass, tokens, cache.tiers.stats().since(before), {k: round(v, 2) for k, v in timings.items()})


def read_figures(reading: ReadResult, cache: ReadCache) -> dict[str, Any]:
    """What a question's read cost, the answer's ``read``: tier-2 hits and misses, bytes and tokens read, tier 1."""
    return {
        "tier2_hits": reading.tiers.hits,
        "tier2_misses": reading.tiers.misses,
        "tier2_hit_rate": round(reading.tiers.hit_rate, 4),
        "tier2_bytes": reading.tiers.tier2_bytes,
        "bytes_read": reading.tiers.bytes_read,
        "tokens_read": reading.tokens_read,
        "tier1_bytes": cache.tier1_bytes,
        "tokens": cache.tokens,
        "compressed": cache.compressed,
        "device": "cpu",
    }

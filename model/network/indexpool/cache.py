"""Tiered cache for full-resolution blocks.

Tier 1 (pooled, optionally INT8, indexer keys) lives in the indexer and is always resident. This module holds
tier 2, an LRU of hot full-resolution pages (keys and values) under a byte budget, and tier 3, the full store: a
growable tensor in RAM, or a memory-mapped file for very long collections. ``fetch`` counts a hit per page found in
tier 2 and a miss per page read from tier 3.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch


class TieredCache:
    def __init__(self, dim: int, page_tokens: int = 64, tier2_bytes: int = 64 << 20, tier3_path: str | None = None):
        self.dim, self.page_tokens, self.tier2_budget = dim, page_tokens, tier2_bytes
        self.path = Path(tier3_path) if tier3_path else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(b"")
        self._ram = torch.empty(0, dim)  # (capacity, dim) when in RAM
        self.length = 0
        self.tier2: OrderedDict[int, torch.Tensor] = OrderedDict()  # page id → (page_tokens, dim)
        self.tier2_used = 0
        self.hits = self.misses = 0

    def append(self, rows: torch.Tensor) -> None:
        """rows (T, dim): full-resolution keys/values (concatenated) of new tokens, written to tier 3."""
        rows = rows.detach().float().cpu()
        if self.path is not None:
            with self.path.open("ab") as f:
                f.write(rows.numpy().tobytes())
        else:
            need = self.length + rows.shape[0]
            if need > self._ram.shape[0]:
                grown = torch.empty(max(need, 2 * self._ram.shape[0]), self.dim)
                grown[: self.length] = self._ram[: self.length]
                self._ram = grown
            self._ram[self.length : need] = rows
        self.length += rows.shape[0]

    def _tier3_page(self, page: int) -> torch.Tensor:
        lo, hi = page * self.page_tokens, min((page + 1) * self.page_tokens, self.length)
        if self.path is None:
            return self._ram[lo:hi].clone()
        mm = np.memmap(self.path, dtype=np.float32, mode="r", shape=(self.length, self.dim))
        return torch.from_numpy(np.array(mm[lo:hi]))

    def fetch(self, token_ids: torch.Tensor) -> torch.Tensor:
        """Full-resolution rows of the given tokens, through the LRU.  token_ids (n,) → (n, dim)"""
        pages = torch.unique(token_ids // self.page_tokens).tolist()
        got: dict[int, torch.Tensor] = {}
        for p in pages:
            if p in self.tier2:
                self.hits += 1
                self.tier2.move_to_end(p)
                got[p] = self.tier2[p]
                continue
            self.misses += 1
            page = self._tier3_page(p)
            got[p] = page
            if page.shape[0] == self.page_tokens:  # only complete pages are cached: later tokens extend the last
                self.tier2[p] = page
                self.tier2_used += page.numel() * page.element_size()
                while self.tier2_used > self.tier2_budget and self.tier2:
                    _, old = self.tier2.popitem(last=False)
                    self.tier2_used -= old.numel() * old.element_size()
        rows = [got[int(t) // self.page_tokens][int(t) % self.page_tokens] for t in token_ids]
        return torch.stack(rows) if rows else torch.empty(0, self.dim)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    @property
    def tier3_bytes(self) -> int:
        return self.length * self.dim * 4

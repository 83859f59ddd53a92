"""Tiers 2 and 3 of a collection's key/value store, as a question's read fetches from them.

Tier 1 (pooled, INT8 by default, indexer entries) is what a read scores; it is small and always resident. Tier 3 is
every token's full-resolution key and value: one array per document (``(layers, L, 2, Hkv, D)`` float16, memory-mapped
from disk by the app, in memory in evaluation). Tier 2 is an LRU of recently read pages of ``page_tokens`` tokens
under a byte budget, shared by every question of the process: a page read again is a hit, a page read from tier 3 a
miss. The rows returned do not depend on the budget (a budget of 0 keeps nothing and reads everything from tier 3).

    tiers = KVTiers(budget_bytes=64 << 20)
    rows = tiers.fetch("doc-17", layer=0, store=array, positions=torch.tensor([3, 4, 900]))   # (3, 2, Hkv, D)
    tiers.stats()                                      # hits, misses, bytes read from tier 3, bytes held in tier 2
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

PAGE_TOKENS = 4  # a page is the tokens of one tier-1 entry at the default ratio: a read fetches whole entries


@dataclass
class TierStats:
    hits: int = 0  # pages found in tier 2
    misses: int = 0  # pages read from tier 3
    bytes_read: int = 0  # bytes read from tier 3
    tier2_bytes: int = 0  # bytes held in tier 2 now

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def since(self, before: TierStats) -> TierStats:
        """The counts added since ``before`` (tier2_bytes: the current figure)."""
        return TierStats(
            self.hits - before.hits, self.misses - before.misses, self.bytes_read - before.bytes_read, self.tier2_bytes
        )


class KVTiers:
    """Tier 2 (an LRU of pages under ``budget_bytes``) in front of tier-3 arrays; thread-safe."""

    def __init__(self, budget_bytes: int = 64 << 20, page_tokens: int = PAGE_TOKENS) -> None:
        self.budget, self.page_tokens = int(budget_bytes), page_tokens
        self.pages: OrderedDict[tuple[Hashable, int, int], torch.Tensor] = OrderedDict()
        self.used = 0
        self.counts = TierStats()
        self._lock = threading.Lock()

    def set_budget(self, budget_bytes: int) -> None:
        """A new tier-2 budget; pages beyond it are evicted, least recently used first."""
        with self._lock:
            self.budget = int(budget_bytes)
            self._evict()

    def stats(self) -> TierStats:
        with self._lock:
            return TierStats(self.counts.hits, self.counts.misses, self.counts.bytes_read, self.used)

    def fetch(self, key: Hashable, layer: int, store: np.ndarray, positions: torch.Tensor) -> torch.Tensor:
        """Rows of token ``positions`` (n,) int64 of one document's tier-3 array ``store`` (layers, L, ...) at
        ``layer``, through tier 2 (``key`` names the document: pages are cached under (key, layer, page)).
        → (n, ...) float32"""
        return self.fetch_many(layer, [key], [store], torch.zeros_like(positions), positions)

    def fetch_many(
        self,
        layer: int,
        keys: Sequence[Hashable],
        stores: Sequence[np.ndarray],
        document: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        """:meth:`fetch` over several documents at once: row n is token ``positions[n]`` of document
        ``document[n]`` (``keys`` and ``stores`` by document).  → (n, ...) float32"""
        P = self.page_tokens
        if positions.numel() == 0:
            return torch.empty(0, *stores[0].shape[2:])
        page_of = positions // P  # (n,)
        span = int(page_of.max()) + 1
        wanted, inverse = torch.unique(document * span + page_of, return_inverse=True)  # by document, then page
        got = []
        with self._lock:
            for d, page in (divmod(w, span) for w in wanted.tolist()):
                slot = (keys[d], layer, page)
                rows = self.pages.get(slot)
                if rows is not None:
                    self.pages.move_to_end(slot)
                    self.counts.hits += 1
                else:
                    rows = torch.from_numpy(np.array(stores[d][layer, page * P : (page + 1) * P]))
                    self.counts.misses += 1
                    self.counts.bytes_read += rows.numel() * rows.element_size()
                    if self.budget > 0:
                        self.pages[slot] = rows
                        self.used += rows.numel() * rows.element_size()
                        self._evict()
                got.append(rows)
        lengths = torch.tensor([rows.shape[0] for rows in got])  # a document's last page may be short
        first = lengths.cumsum(0) - lengths  # each page's first row among their rows
        return torch.cat(got)[first[inverse] + positions - page_of * P].float()

    def _evict(self) -> None:
        while self.used > self.budget and self.pages:
            _, old = self.pages.popitem(last=False)
            self.used -= old.numel() * old.element_size()

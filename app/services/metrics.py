"""What the dashboard shows: the recorded requests (each ask with its read: tier-2 hits, bytes read, stage timings),
the read cache of each collection as answers use it, and the indexer benchmark run at one length
(``model.bench.indexer.run_benchmark``), recorded as a "bench" metric."""

from __future__ import annotations

import time
from typing import Any

from app.services.errors import UserError
from app.services.indexes import IndexService
from app.services.library import LibraryService
from app.services.settings import SettingsService
from storage.metrics import MetricStore

BENCH_TOKENS = (8192, 1_000_000)  # the lengths the dashboard's benchmark accepts


class MetricsService:
    def __init__(self, library: LibraryService, indexes: IndexService, settings: SettingsService) -> None:
        self.library, self.indexes, self.settings = library, indexes, settings
        self.store = MetricStore(library.library)

    def records(self, user: str = "") -> list[dict[str, Any]]:
        """``user``'s recorded requests (asks, summaries, benchmarks), oldest first."""
        return self.store.records(user)

    def cache_memory(self, user: str = "") -> list[dict[str, Any]]:
        """Per collection of ``user``, the read cache as answers use it (``IndexService.cache_bytes``): tier-1 bytes
        under the user's cache settings, the same keys uncompressed, tier-3 bytes on disk, and the settings' label:
        ``[{"collection", "tokens", "tier1", "uncompressed", "tier3", "cache"}]``."""
        from model.network.indexpool.config import PRESETS  # the dashboard's: the model is loaded there anyway

        settings = self.settings.settings(user)
        adaptive = " adaptive" if PRESETS.get(settings["preset"], {}).get("adaptive") else ""  # disagreeing blocks stay
        label = f"{settings['preset']}, {settings['ratio']}:1{adaptive}" + (" INT8" if settings["int8"] else "")
        rows = []
        for info in self.library.collections(user):
            sizes = self.indexes.cache_bytes(info.name, user)
            rows.append({"collection": info.name, "tokens": info.tokens, **sizes, "cache": label})
        return rows

    def run_indexer_bench(self, tokens: int, queries: int = 8, steps: int = 5, user: str = "") -> dict[str, Any]:
        """The indexer benchmark at one context length (few queries and timed steps, so that it takes seconds on a
        CPU once the encoder states are cached); its result, also stored as a "bench" metric."""
        from model.bench.indexer import BenchOptions, SetupError, run_benchmark  # torch and the key encoders

        low, high = BENCH_TOKENS
        if not low <= tokens <= high:
            raise UserError(f"the benchmark length must be between {low:,} and {high:,} tokens, got {tokens:,}")
        started = time.perf_counter()
        try:
            (result,) = run_benchmark(BenchOptions(tokens=str(tokens), queries=queries, steps=steps))
        except SetupError as error:
            raise UserError(f"the indexer benchmark failed: {error}") from error
        self.store.add(
            "bench",
            (time.perf_counter() - started) * 1000,
            {"tokens": tokens, "methods": result["methods"], "setting": result["setting"]},
            user=user,
        )
        return result

"""What the dashboard shows: the recorded requests, the indexer cache memory of each collection, and the indexer
benchmark run at one length (``model.bench.indexer.run_benchmark``), recorded as a "bench" metric."""

from __future__ import annotations

import time
from typing import Any

from app.services.errors import UserError
from app.services.library import LibraryService
from storage.metrics import MetricStore

BENCH_TOKENS = (8192, 1_000_000)  # the lengths the dashboard's benchmark accepts


class MetricsService:
    def __init__(self, library: LibraryService) -> None:
        self.library = library
        self.store = MetricStore(library.library)

    def records(self, user: str = "") -> list[dict[str, Any]]:
        """``user``'s recorded requests (asks, summaries, benchmarks), oldest first."""
        return self.store.records(user)

    def cache_memory(self, ratio: int = 4, user: str = "") -> list[dict[str, Any]]:
        """Per collection, the indexer key-cache bytes of its documents (each its own stream) uncompressed, with
        IndexPool at ``ratio``:1, and with INT8 entries: ``[{"collection", "method", "bytes"}]``."""
        from model.network.indexpool.config import IndexPoolConfig  # torch (the package): only for the dashboard
        from model.network.indexpool.indexer import cache_bytes

        try:
            methods = {
                "uncompressed": (IndexPoolConfig(), "uncompressed"),
                f"IndexPool {ratio}:1": (IndexPoolConfig(ratio=ratio), "indexpool"),
                f"IndexPool {ratio}:1 INT8": (IndexPoolConfig(ratio=ratio, int8=True), "indexpool"),
            }
        except ValueError as error:
            raise UserError(str(error)) from error
        rows = []
        for info in self.library.collections(user):
            tokens = [d.tokens for d in self.library.ingested(info.name, user)]
            for label, (cfg, method) in methods.items():
                rows.append(
                    {
                        "collection": info.name,
                        "method": label,
                        "bytes": sum(cache_bytes(cfg, t, method) for t in tokens),
                    }
                )
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

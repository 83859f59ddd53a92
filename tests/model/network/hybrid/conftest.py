"""A tiny hybrid config: every mechanism (query blocks, sink, window, pooled top-k, GLA chunks) at small sizes."""

from __future__ import annotations

import pytest
import torch

from model.network.hybrid import HybridConfig

TINY = dict(
    d_model=64, n_heads=2, head_dim=32, n_kv_heads=1, mlp_ratio=2.0, gla_chunk=16, gla_gate_rank=8,
    indexer_heads=2, indexer_dim=16, query_block=16, local_window=32, sink_tokens=16,
    prefill_topk_tokens=32, topk_tokens=32, cache_dtype="float32",
)  # fmt: skip


@pytest.fixture
def tiny() -> HybridConfig:
    torch.manual_seed(0)
    return HybridConfig(**TINY)


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread is faster, and steady on a shared, busy CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

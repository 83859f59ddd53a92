"""A question's read selects the same tokens through the Triton indexer kernel (the interpreter on CPU, CUDA when
present) as through the CPU path, on odd sizes, for float and INT8 tier 1."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from model.inference.read import CacheConfig, DocumentEntries, DocumentStore, ReadCache
from model.network.checkpoint import EvidenceWeights, Model
from model.network.hybrid import HybridConfig
from model.network.indexpool import KVTiers
from model.network.net import IndexPoolNet

SMALL = dict(
    d_model=48, n_heads=2, head_dim=16, n_kv_heads=1, mlp_ratio=2.0, gla_chunk=16, gla_gate_rank=8,
    indexer_heads=3, indexer_dim=16, query_block=16, local_window=16, sink_tokens=16,
    prefill_topk_tokens=16, cache_dtype="float32", vocab_size=300,
)  # fmt: skip


@pytest.mark.parametrize("int8", [False, True], ids=["float", "int8"])
@pytest.mark.parametrize("lengths, k_tokens", [((1003,), 37), ((301, 77, 645), 61)])
def test_the_read_selects_the_same_tokens_on_triton_and_cpu(int8, lengths, k_tokens):
    torch.manual_seed(0)
    net = IndexPoolNet(HybridConfig(**SMALL)).eval()
    model = Model(net, EvidenceWeights(), None, Path())
    config = CacheConfig(int8=int8, min_tokens=0)
    documents = []
    for i, n in enumerate(lengths):
        ids = torch.randint(0, SMALL["vocab_size"], (n,), generator=torch.Generator().manual_seed(i))
        store = DocumentStore.of(net.model.prefill(ids, chunk_tokens=128, record=True))
        documents.append((i, store, DocumentEntries.pool(store, config, model)))
    question = torch.tensor([3, 141, 59, 26, 5, 35, 89, 79, 32])  # 9 tokens
    reads = {}
    for backend in ("cpu", "triton"):
        cache = ReadCache(model, documents, config, KVTiers(0), backend=backend)
        reads[backend] = net.model.read(question, [cache.layer(i) for i in range(net.cfg.n_layers)], k_tokens)
    for cpu, triton in zip(reads["cpu"].layers, reads["triton"].layers, strict=True):
        assert torch.equal(cpu.tokens, triton.tokens)
    assert torch.allclose(reads["cpu"].hidden, reads["triton"].hidden, atol=1e-5)

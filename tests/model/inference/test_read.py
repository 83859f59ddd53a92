"""The question-time read over stored documents: selecting every token is full attention; the cache configurations
select differently; tier 2 changes nothing but the hits; tier 1 covers every token once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from tolerance import assert_close

from model.inference.read import CacheConfig, DocumentEntries, DocumentStore, ReadCache, read_passages
from model.network.checkpoint import EvidenceWeights, Model
from model.network.hybrid import DenseLayer, HybridConfig
from model.network.indexpool import KVTiers
from model.network.net import IndexPoolNet

TINY = dict(
    d_model=64, n_heads=2, head_dim=32, n_kv_heads=1, mlp_ratio=2.0, gla_chunk=16, gla_gate_rank=8,
    indexer_heads=2, indexer_dim=16, query_block=16, local_window=32, sink_tokens=16,
    prefill_topk_tokens=32, topk_tokens=32, cache_dtype="float32", vocab_size=500,
)  # fmt: skip


@pytest.fixture
def model() -> Model:
    torch.manual_seed(0)
    net = IndexPoolNet(HybridConfig(**TINY)).eval()
    with torch.no_grad():  # sharper, distinct question heads than the random initialization gives
        for block in net.model.blocks:
            block.sparse.question.log_scale.copy_(torch.tensor([1.5, 0.5]))
            block.sparse.question.token_gate.weight.normal_()
    return Model(net, EvidenceWeights(), None, Path())  # the read needs no tokenizer


def stores(model: Model, *lengths: int) -> list[DocumentStore]:
    """Documents of random tokens, each encoded as its own recording stream."""
    out = []
    for i, n in enumerate(lengths):
        ids = torch.randint(0, TINY["vocab_size"], (n,), generator=torch.Generator().manual_seed(i))
        out.append(DocumentStore.of(model.net.model.prefill(ids, chunk_tokens=64, record=True)))
    return out


def cache(model: Model, documents: list[DocumentStore], config: CacheConfig, tiers: KVTiers | None = None):
    pooled = [DocumentEntries.pool(s, config, model) for s in documents]
    joined = [(f"doc{i}", s, e) for i, (s, e) in enumerate(zip(documents, pooled, strict=True))]
    return ReadCache(model, joined, config, tiers or KVTiers(0))


QUESTION = torch.tensor([5, 17, 301, 42, 99, 7, 250])


def test_a_read_selecting_every_token_is_full_attention(model):
    documents = stores(model, 150, 77)
    read_cache = cache(model, documents, CacheConfig(method="uncompressed"))
    net = model.net.model
    sparse = net.read(QUESTION, [read_cache.layer(i) for i in range(2)], k_tokens=-1)
    dense = net.read(QUESTION, [DenseLayer(torch.from_numpy(np.concatenate([s.kv[i] for s in documents])).float())
                                for i in range(2)])  # fmt: skip
    assert_close(sparse.hidden, dense.hidden, "float32-stack")
    for s, d in zip(sparse.layers, dense.layers, strict=True):
        assert s.tokens.tolist() == list(range(227))  # every token of both documents
        assert_close(s.mass, d.mass, "float32")


def test_uncompressed_r4_and_int8_caches_select_differently(model):
    documents = stores(model, 3000, 2000)  # entries dense enough that INT8 rounding moves a few across the top-k
    question = torch.randint(0, TINY["vocab_size"], (24,), generator=torch.Generator().manual_seed(9))
    selections = {}
    for name, config in {
        "r=1": CacheConfig(method="uncompressed", min_tokens=0),
        "r=4": CacheConfig(int8=False, min_tokens=0),
        "r=4 INT8": CacheConfig(int8=True, min_tokens=0),
    }.items():
        read_cache = cache(model, documents, config)
        assert read_cache.compressed == (name != "r=1")
        out = model.net.model.read(question, [read_cache.layer(i) for i in range(2)], k_tokens=32)
        selections[name] = [set(layer.tokens.tolist()) for layer in out.layers]
        assert all(len(s) <= 24 * 32 for s in selections[name])  # at most k tokens per question token
    for a, b in (("r=1", "r=4"), ("r=4", "r=4 INT8"), ("r=1", "r=4 INT8")):
        assert selections[a] != selections[b], (a, b)
    overlap = len(selections["r=4"][1] & selections["r=4 INT8"][1]) / len(selections["r=4"][1])
    assert overlap > 0.5  # INT8 changes a few entries, not the whole selection


def test_answers_do_not_depend_on_the_tier2_budget(model):
    documents = stores(model, 900, 500)
    config = CacheConfig(min_tokens=0)
    passages = torch.tensor([[0, 300], [300, 900], [900, 1100], [1100, 1400]])
    results = {}
    for budget in (0, 1 << 30):
        read_cache = cache(model, documents, config, KVTiers(budget))
        first = read_passages(model, passages, read_cache, QUESTION, k_tokens=32)
        again = read_passages(model, passages, read_cache, QUESTION, k_tokens=32)
        results[budget] = (first, again)
    (cold, cold_again), (warm, warm_again) = results[0], results[1 << 30]
    for other in (cold_again, warm, warm_again):
        assert_close(other.mass, cold.mass, "exact")
    assert cold.tiers.hits == cold_again.tiers.hits == 0 and cold_again.tiers.misses == cold.tiers.misses
    assert warm.tiers.hits == 0 and warm_again.tiers.misses == 0 and warm_again.tiers.hit_rate == 1.0
    assert warm_again.tiers.bytes_read == 0 < warm.tiers.bytes_read == cold.tiers.bytes_read
    assert cold.tokens_read > 0 and set(cold.timings_ms) == {"select", "fetch", "attend", "other"}


def _resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1] in "0123456789abcdef" and "-" in line.split()[0]:
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="reads /proc/self/smaps (Linux)")
def test_a_memory_mapped_store_is_read_not_held(model, tmp_path: Path):
    (made,) = stores(model, 4000)
    np.save(tmp_path / "kv.npy", made.kv)
    np.save(tmp_path / "keys.npy", made.keys)
    mapped = DocumentStore(np.load(tmp_path / "kv.npy", mmap_mode="r"), np.load(tmp_path / "keys.npy", mmap_mode="r"))
    passages = torch.tensor([[0, 2000], [2000, 4000]])
    config = CacheConfig(min_tokens=0)
    in_memory = read_passages(model, passages, cache(model, [made], config), QUESTION, k_tokens=32)
    read_cache = cache(model, [mapped], config)  # pooling reads every indexer key, then lets the pages go
    assert _resident_kib(tmp_path / "keys.npy") == 0
    first = read_passages(model, passages, read_cache, QUESTION, k_tokens=32)
    assert first.tiers.bytes_read > 0 and _resident_kib(tmp_path / "kv.npy") == 0  # read, then let go
    assert_close(first.mass, in_memory.mass, "exact")
    assert_close(read_passages(model, passages, read_cache, QUESTION, k_tokens=32).mass, first.mass, "exact")
    np.asarray(mapped.kv).sum()  # without a release, what is read stays mapped
    assert _resident_kib(tmp_path / "kv.npy") > 0


@pytest.mark.parametrize("preset", ["default", "technical", "news"])
@pytest.mark.parametrize("int8", [False, True])
def test_tier1_covers_every_token_once(model, preset, int8):
    (document,) = stores(model, 211)  # 52 blocks of 4 and 3 tokens left over
    entries = DocumentEntries.pool(document, CacheConfig(preset=preset, int8=int8), model)
    for starts, lengths in zip(entries.starts, entries.lengths, strict=True):
        covered = torch.cat([torch.arange(s, s + n) for s, n in zip(starts.tolist(), lengths.tolist(), strict=True)])
        assert covered.tolist() == list(range(211))
    again = DocumentEntries.from_arrays(entries.to_arrays(), 2)
    assert all(torch.equal(a, b) for a, b in zip(again.rows, entries.rows, strict=True))
    assert entries.nbytes == sum(r.numel() * r.element_size() for r in entries.rows) + (
        sum(s.numel() * 2 for s in entries.scales) if int8 else 0
    )


def test_presets_change_the_entries(model):
    (document,) = stores(model, 400)
    pooled = {p: DocumentEntries.pool(document, CacheConfig(preset=p, int8=False), model) for p in ("default", "news")}
    assert not torch.equal(pooled["default"].rows[0], pooled["news"].rows[0])
    technical = DocumentEntries.pool(document, CacheConfig(preset="technical", int8=False), model)
    assert technical.rows[0].shape[0] > pooled["default"].rows[0].shape[0]  # adaptive: some blocks stay unpooled


def test_a_small_selection_reads_uncompressed_keys(model):
    documents = stores(model, 300)
    small = cache(model, documents, CacheConfig())  # under min_tokens (10,000)
    assert not small.compressed and small.tier1_bytes == 300 * 2 * 16 * 4
    big = cache(model, documents, dataclasses.replace(CacheConfig(), min_tokens=100))
    assert big.compressed and big.tier1_bytes < small.tier1_bytes / 10

"""Indexer scoring + running top-k: Triton (interpreter on CPU) and the CPU fast path against the reference."""

import pytest
import torch
from tolerance import assert_close

from kernels.indexer_topk import indexer_scores_reference, indexer_topk, indexer_topk_reference
from kernels.pooling import quantize_int8

SIZES = [63, 1000, 2049]


def _inputs(N: int, dtype: torch.dtype, device: str, Tq: int = 2, H: int = 3, D: int = 40):
    g = torch.Generator().manual_seed(N)
    q = torch.randn(Tq, H, D, generator=g).to(dtype).to(device)
    w = torch.rand(Tq, H, generator=g).to(device)
    keys = torch.randn(N, D, generator=g).to(dtype).to(device)
    return q, w, keys


def _check_topk(values, indices, q, w, keys, k, scales, kind):
    ref_v, _ = indexer_topk_reference(q, w, keys, k, scales)
    assert values.shape == indices.shape == (q.shape[0], k)
    assert_close(values, ref_v, kind)  # the same k best scores, descending
    # the chosen indices really have those scores (ties may pick different indices)
    full = indexer_scores_reference(q, w, keys, scales)
    assert_close(full.gather(1, indices.cpu()), ref_v, kind)
    assert all(len(set(row.tolist())) == k for row in indices)


@pytest.mark.parametrize("backend", ["triton", "cpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("N", SIZES)
@pytest.mark.parametrize("k", [16, 50])
def test_topk_matches_reference(backend, dtype, N, k, device):
    if backend == "cpu" and device != "cpu":
        pytest.skip("the CPU fast path runs on CPU tensors")
    q, w, keys = _inputs(N, dtype, device)
    k = min(k, N)
    values, indices = indexer_topk(q, w, keys, k, backend=backend)
    _check_topk(values, indices, q.cpu(), w.cpu(), keys.cpu(), k, None, "float32")


@pytest.mark.parametrize("backend", ["triton", "cpu"])
@pytest.mark.parametrize("N", SIZES)
def test_topk_int8_matches_reference(backend, N, device):
    if backend == "cpu" and device != "cpu":
        pytest.skip("the CPU fast path runs on CPU tensors")
    q, w, keys = _inputs(N, torch.float32, device)
    codes, scales = quantize_int8(keys.cpu())
    values, indices = indexer_topk(q, w, codes.to(device), 16, scales=scales.to(device), backend=backend)
    _check_topk(values, indices, q.cpu(), w.cpu(), codes, 16, scales, "float32")  # float queries on both paths


def test_topk_negative_head_weights_and_single_tile(device):
    """Negative weights give negative scores: the packed ordering must still be the float ordering."""
    q, w, keys = _inputs(1000, torch.float32, device, Tq=1, H=2, D=16)
    w = -w
    values, indices = indexer_topk(q, w, keys, 8, backend="triton")
    _check_topk(values, indices, q.cpu(), w.cpu(), keys.cpu(), 8, None, "float32")


def test_topk_cpu_chunking_is_exact(monkeypatch):
    """Many chunks and a running merge give the same result as one pass."""
    import kernels.indexer_topk.cpu as cpu

    q, w, keys = _inputs(2049, torch.float32, "cpu")
    monkeypatch.setattr(cpu, "CHUNK_ELEMENTS", 64)
    values, indices = indexer_topk(q, w, keys, 20, backend="cpu")
    _check_topk(values, indices, q, w, keys, 20, None, "float32")


@pytest.mark.parametrize("levels", [3, 50, 10**6])
def test_top_first_takes_the_lowest_positions_among_ties(levels):
    """The CPU merge's top-k: the m largest of each row, ties at the m-th value lowest position first — through its
    fast path (no tie left out, many levels) and its tie-breaking path (a few levels: ties everywhere)."""
    from kernels.indexer_topk.cpu import top_first

    g = torch.Generator().manual_seed(levels)
    scores = torch.randint(0, levels, (7, 301), generator=g).float()
    for m in (1, 17, 301):
        order = torch.sort(-scores, dim=1, stable=True).indices  # descending, equal values lowest position first
        assert torch.equal(top_first(scores, m), order[:, :m].sort(dim=1).values)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"w": torch.rand(2, 4)}, "w must be"),
        ({"keys": torch.randn(10, 7)}, "keys must be"),
        ({"k": 11}, "k must be in"),
        ({"keys": torch.randint(-3, 3, (10, 8), dtype=torch.int8)}, "int8 keys need"),
        ({"backend": "cuda"}, "backend must be one of"),
    ],
)
def test_topk_checks_inputs(change, message):
    args = {"q": torch.randn(2, 3, 8), "w": torch.rand(2, 3), "keys": torch.randn(10, 8), "k": 4} | change
    with pytest.raises(ValueError, match=message):
        indexer_topk(args.pop("q"), args.pop("w"), args.pop("keys"), args.pop("k"), **args)


def test_topk_saturated_tiles_are_rescored(device):
    """With tiles keeping fewer candidates than k, saturated tiles are rescored: the result stays exact."""
    from kernels.indexer_topk.triton_kernel import indexer_topk_triton

    q, w, keys = _inputs(1000, torch.float32, device, Tq=1)
    values, indices = indexer_topk_triton(q, w, keys, 50, tile_topk=32)
    _check_topk(values, indices, q.cpu(), w.cpu(), keys.cpu(), 50, None, "float32")


@pytest.mark.parametrize("backend", ["triton", "cpu", "reference"])
def test_ties_go_to_the_lowest_index_and_limits_mask_keys(backend, device, monkeypatch):
    """Scores of exactly 0 (ReLU makes many: here zero keys) are taken lowest index first by every backend and
    chunking; a query's limit hides the keys at and beyond it."""
    import kernels.indexer_topk.cpu as cpu

    if backend != "triton" and device != "cpu":
        pytest.skip("the CPU paths run on CPU tensors")
    monkeypatch.setattr(cpu, "CHUNK_ELEMENTS", 48)  # many chunks on the CPU path
    q, w, keys = _inputs(77, torch.float32, device, Tq=3, H=2, D=16)
    q = q.abs()
    keys = keys.abs()
    keys[torch.arange(77, device=device) % 4 != 1] = 0  # score exactly 0 in any arithmetic
    limits = torch.tensor([77, 40, 5], device=device)
    values, indices = indexer_topk(q, w, keys, 30, limits=limits, backend=backend)
    values, indices = values.cpu(), indices.cpu()
    positive = [[i for i in range(int(limit)) if i % 4 == 1] for limit in limits.tolist()]
    for t, limit in enumerate(limits.tolist()):
        n_pos = len(positive[t])
        assert sorted(indices[t, :n_pos].tolist()) == positive[t] and (values[t, :n_pos] > 0).all()
        zeros = [i for i in range(limit) if i % 4 != 1][: 30 - n_pos]
        assert indices[t, n_pos : n_pos + len(zeros)].tolist() == zeros  # the ties, lowest index first
        assert (values[t, n_pos : n_pos + len(zeros)] == 0).all()
        assert not torch.isfinite(values[t, n_pos + len(zeros) :]).any()  # nothing beyond the limit

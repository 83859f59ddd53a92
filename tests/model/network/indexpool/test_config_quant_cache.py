"""Config, INT8 / fake quant, and the tiered cache."""

import numpy as np
import pytest
import torch
from tolerance import assert_close

from kernels.pooling import quantize_int8
from model.network.indexpool import IndexPoolConfig, KVTiers, fake_quant, hadamard


def test_config_json_round_trip_and_presets(tmp_path):
    cfg = IndexPoolConfig.preset("technical", ratio=8)
    path = tmp_path / "ip.json"
    cfg.to_json(path)
    assert IndexPoolConfig.from_json(path) == cfg
    assert cfg.beta > IndexPoolConfig().beta and cfg.ratio == 8
    news = IndexPoolConfig.preset("news")
    assert news.decay > IndexPoolConfig().decay and news.gamma > IndexPoolConfig().gamma
    assert IndexPoolConfig().min_length == 10_000
    with pytest.raises(ValueError, match="unknown IndexPoolConfig fields"):
        IndexPoolConfig.from_dict({"ratio": 4, "alpha_": 1})
    with pytest.raises(ValueError, match="ratio must be"):
        IndexPoolConfig(ratio=3)
    with pytest.raises(ValueError, match="unknown preset"):
        IndexPoolConfig.preset("poetry")


def test_hadamard_is_orthonormal():
    h = hadamard(64)
    assert_close(h @ h.t(), torch.eye(64), "float32")
    with pytest.raises(ValueError, match="power-of-two"):
        hadamard(48)


@pytest.mark.parametrize("rotate", [False, True])
def test_int8_error_is_within_half_a_step(rotate):
    x = torch.randn(500, 64) * torch.linspace(0.1, 10, 64)  # uneven channels
    rot = hadamard(64) if rotate else None
    q, s = quantize_int8(x, rot)
    xr = x @ rot if rotate else x
    assert ((q.float() * s[:, None] - xr).abs() <= s[:, None] / 2 + 1e-6).all()
    if rotate:  # scores are invariant: (q R) · (k R) = q · k
        y = torch.randn(64)
        error = ((q.float() * s[:, None]) @ (y @ rot) - x @ y).abs().max()
        assert error <= 0.05 * (x @ y).abs().max()  # INT8 rounding bound: 5 % of the largest product


def test_fake_quant_forward_and_straight_through_gradient():
    x = torch.randn(10, 32, requires_grad=True)
    y = fake_quant(x)
    q, s = quantize_int8(x.detach())
    assert_close(y, q.float() * s[:, None], "float32")
    (y * torch.arange(32.0)).sum().backward()
    assert torch.equal(x.grad, torch.arange(32.0).expand(10, 32))  # straight through
    noisy = fake_quant(x.detach(), noise=0.5)
    step = x.detach().abs().amax(-1, keepdim=True) / 127
    assert ((noisy - x.detach()).abs() <= step + 1e-6).all()


@pytest.mark.parametrize("memmap", [False, True])
def test_kv_tiers_lru_budget_and_counters(tmp_path, memmap):
    store = np.arange(2 * 41 * 2 * 3, dtype=np.float16).reshape(2, 41, 2, 3)  # (layers, L, 2, D): 41 tokens
    if memmap:
        np.save(tmp_path / "kv.npy", store)
        store = np.load(tmp_path / "kv.npy", mmap_mode="r")
    page_bytes = 4 * 2 * 3 * 2  # 4 tokens × (2, 3) float16
    tiers = KVTiers(budget_bytes=2 * page_bytes, page_tokens=4)
    want = torch.from_numpy(np.asarray(store, dtype=np.float32))

    def fetch(*positions: int, layer: int = 1) -> torch.Tensor:
        return tiers.fetch("doc", layer, store, torch.tensor(positions))

    assert torch.equal(fetch(0, 5, 6), want[1, [0, 5, 6]])  # pages 0, 1: two misses
    assert (tiers.stats().hits, tiers.stats().misses) == (0, 2)
    assert tiers.stats().bytes_read == 2 * page_bytes
    fetch(1)  # page 0: hit, now most recent
    assert (tiers.stats().hits, tiers.stats().misses) == (1, 2)
    fetch(9)  # page 2: miss, evicts page 1 (least recent)
    assert [page for _, _, page in tiers.pages] == [0, 2] and tiers.stats().tier2_bytes <= 2 * page_bytes
    fetch(4)  # page 1 again: miss
    before = tiers.stats()
    assert (before.hits, before.misses) == (1, 4)
    assert_close(before.hit_rate, 0.2, "float32")
    assert torch.equal(fetch(40, 3), want[1, [40, 3]])  # the last page holds one token
    assert torch.equal(fetch(5, layer=0), want[0, [5]])  # layers are cached apart
    assert tiers.stats().since(before).misses == 3
    tiers.set_budget(0)  # nothing kept, the same rows
    assert tiers.stats().tier2_bytes == 0 and torch.equal(fetch(0, 40), want[1, [0, 40]])
    assert fetch().shape == (0, 2, 3)

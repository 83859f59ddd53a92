"""Weighted block pooling: Triton (interpreter on CPU) and the CPU fast path against the float32 reference."""

import pytest
import torch
from tolerance import assert_close

from kernels.pooling import weighted_pool, weighted_pool_reference
from kernels.pooling.reference import quantize_int8_reference
from model.network.indexpool.quant import hadamard

SIZES = [63, 1000, 2049]  # none a multiple of 4 or 8 except 1000 (a multiple of 4 but not of 16·r)
DTYPES = [torch.float32, torch.float16]


def _inputs(T: int, D: int, dtype: torch.dtype, device: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    keys = torch.randn(T, D, generator=g).to(dtype).to(device)
    weights = (torch.rand(T, generator=g) + 0.05).to(device)
    return keys, weights


@pytest.mark.parametrize("backend", ["triton", "cpu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("T", SIZES)
@pytest.mark.parametrize("ratio", [2, 4, 8])
def test_pool_matches_reference(backend, dtype, T, ratio, device):
    if backend == "cpu" and device != "cpu":
        pytest.skip("the CPU fast path runs on CPU tensors")
    keys, weights = _inputs(T, 48, dtype, device)
    out = weighted_pool(keys, weights, ratio, backend=backend)
    assert out.shape == (T // ratio, 48) and out.dtype == dtype
    assert_close(out, weighted_pool_reference(keys, weights, ratio), "float32" if dtype == torch.float32 else "float16")


@pytest.mark.parametrize("backend", ["triton", "cpu"])
@pytest.mark.parametrize("rotate", [False, True], ids=["plain", "hadamard"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("T", SIZES)
def test_pool_int8_matches_reference(backend, rotate, dtype, T, device):
    if backend == "cpu" and device != "cpu":
        pytest.skip("the CPU fast path runs on CPU tensors")
    keys, weights = _inputs(T, 64, dtype, device)
    rot = hadamard(64, device) if rotate else None
    q, s = weighted_pool(keys, weights, 4, quantize=True, rotation=rot, backend=backend)
    ref = weighted_pool_reference(keys.cpu(), weights.cpu(), 4)
    q_ref, s_ref = quantize_int8_reference(ref, rot.cpu() if rotate else None)
    assert q.dtype == torch.int8 and q.shape == (T // 4, 64) and s.shape == (T // 4,)
    assert_close(s, s_ref, "int8-scale" if dtype == torch.float32 else "float16")
    # codes may differ by one step where x/scale sits at a rounding boundary (fp16 / summation order)
    assert (q.int().cpu() - q_ref.int()).abs().max() <= 1
    # dequantized pooled keys are within half a step of the (rotated) reference
    x = ref @ (rot.float().cpu() if rotate else torch.eye(64))
    slack = 1e-5 if dtype == torch.float32 else 4e-3
    assert ((q.float().cpu() * s.cpu()[:, None] - x).abs() <= 0.5 * s.cpu()[:, None] + slack).all()


@pytest.mark.parametrize("backend", ["triton", "cpu"])
@pytest.mark.parametrize("T", SIZES)
def test_pool_gradients_match_reference(backend, T, device):
    if backend == "cpu" and device != "cpu":
        pytest.skip("the CPU fast path runs on CPU tensors")
    keys, weights = _inputs(T, 32, torch.float32, device)
    grad = torch.randn(T // 4, 32, generator=torch.Generator().manual_seed(1)).to(device)
    k1, w1 = keys.clone().requires_grad_(), weights.clone().requires_grad_()
    (weighted_pool(k1, w1, 4, backend=backend) * grad).sum().backward()
    k2, w2 = keys.clone().requires_grad_(), weights.clone().requires_grad_()
    (weighted_pool_reference(k2, w2, 4) * grad).sum().backward()
    assert_close(k1.grad, k2.grad, "grad")
    assert_close(w1.grad, w2.grad, "grad")
    assert (k1.grad[T // 4 * 4 :] == 0).all()  # keys of the incomplete block get no gradient


def test_pool_batched_leading_dims(device):
    keys = torch.randn(3, 2, 37, 16).to(device)
    weights = torch.rand(3, 2, 37).to(device)
    out = weighted_pool(keys, weights, 4, backend="triton")
    assert out.shape == (3, 2, 9, 16)
    assert_close(out, weighted_pool_reference(keys, weights, 4), "float32")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ratio": 3}, "power of two"),
        ({"weights": torch.rand(10)}, "weights must have shape"),
        ({"keys": torch.ones(12, 8, dtype=torch.int64)}, "float tensor"),
        ({"backend": "gpu"}, "backend must be one of"),
        ({"rotation": torch.eye(4), "quantize": True}, "rotation must be"),
        ({"rotation": torch.eye(8)}, "pass quantize=True"),
    ],
)
def test_pool_checks_inputs(kwargs, message):
    args = {"keys": torch.randn(12, 8), "weights": torch.rand(12), "ratio": 4} | kwargs
    with pytest.raises(ValueError, match=message):
        weighted_pool(args.pop("keys"), args.pop("weights"), args.pop("ratio"), **args)

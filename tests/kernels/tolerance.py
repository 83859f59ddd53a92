"""The one tolerance helper of the kernel tests: named (atol, rtol) pairs by what is compared."""

import torch

# Named tolerances (atol, rtol) by what is compared; every kernel test goes through assert_close.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),  # fp16 outputs: half an ulp of values up to ~4
    "grad": (1e-5, 1e-4),
    "int8-scale": (1e-7, 1e-6),
    "int8-scores": (2e-2, 2e-2),  # CPU int8 path also rounds the query to int8
}


def assert_close(actual: torch.Tensor, expected: torch.Tensor, kind: str) -> None:
    atol, rtol = TOLERANCES[kind]
    torch.testing.assert_close(actual.float().cpu(), expected.float().cpu(), atol=atol, rtol=rtol)

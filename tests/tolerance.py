"""The one numeric tolerance helper of the kernel and model tests: named (atol, rtol) pairs by what is compared."""

import numpy as np
import torch

TOLERANCES: dict[str, tuple[float, float]] = {
    "exact": (0.0, 0.0),  # the same computation, or a copy
    "float64": (1e-10, 1e-10),  # float64 paths of one formula
    "float32": (1e-5, 1e-5),  # float32 paths of one formula (reordered sums)
    "float32-stack": (2e-5, 1e-5),  # float32 through a whole model (chunked vs one pass)
    "float32-recurrence": (1e-5, 1e-4),  # float32 recurrent vs chunkwise linear attention
    "float32-vs-float64": (1e-4, 1e-4),  # a float32 kernel against a float64 reference
    "float16": (2e-3, 2e-3),  # fp16 outputs: half an ulp of values up to ~4
    "grad": (1e-5, 1e-4),
    "int8-scale": (1e-7, 1e-6),
    "distilled": (1e-3, 1e-4),  # PCA-reduced teacher vectors recomputed
}


def assert_close(actual: torch.Tensor | np.ndarray, expected: torch.Tensor | np.ndarray | float, kind: str) -> None:
    """``actual`` equals ``expected`` within the tolerance named ``kind``."""
    atol, rtol = TOLERANCES[kind]
    actual = torch.as_tensor(np.asarray(actual) if isinstance(actual, np.ndarray) else actual)
    expected = torch.as_tensor(expected, dtype=actual.dtype) if not isinstance(expected, torch.Tensor) else expected
    if expected.shape != actual.shape:
        expected = expected.expand_as(actual)
    dtype = torch.float64 if torch.float64 in (actual.dtype, expected.dtype) else torch.float32
    torch.testing.assert_close(actual.to(dtype).cpu(), expected.to(dtype).cpu(), atol=atol, rtol=rtol)

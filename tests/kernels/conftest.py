"""Kernel tests run the Triton kernels on CPU through the interpreter: TRITON_INTERPRET must be set before any module
defining a ``@triton.jit`` kernel is imported, so it is the first thing here (the kernel packages import their Triton
modules lazily, so tests in other folders that import the CPU paths do not fix the mode first). A CUDA run sets
TRITON_INTERPRET=0 beforehand (scripts/gpu_check.sh)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(scope="session")
def device() -> str:
    interpret = os.environ.get("TRITON_INTERPRET", "0") == "1"
    return "cuda" if torch.cuda.is_available() and not interpret else "cpu"

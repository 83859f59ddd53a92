"""Compute kernels, one folder per op: a float32 PyTorch reference, a Triton kernel and a CPU fast path each."""

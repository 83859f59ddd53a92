"""Compile every Triton kernel for the H200 target (sm_90) without a GPU: ``python -m kernels.compile_check``.

Catches what the CPU interpreter does not enforce (``tl.dot`` shape rules, non-constexpr globals, shared-memory
size). Must run with TRITON_INTERPRET unset, so the kernel tests call it in a subprocess.
"""

from __future__ import annotations

import os
import sys
import time

SHARED_MEMORY_LIMIT = 227 * 1024  # bytes per block on sm_90


def _pool_cases() -> list[tuple[str, dict, dict]]:
    from kernels.pooling.triton_kernel import default_block_m

    cases = []
    for kdt, ratio, quant, rotate in [("fp32", 4, False, False), ("fp16", 8, True, True), ("bf16", 2, True, False)]:
        sig = {
            "K": f"*{kdt}",
            "W": "*fp32",
            "OUT": "*i8" if quant else f"*{kdt}",
            "SCALE": "*fp32",
            "R": "*fp32",
            "n_blocks": "i32",
            "D": "i32",
            "stride_k": "i32",
            "stride_o": "i32",
        }
        const = {
            "RATIO": ratio,
            "BLOCK_M": default_block_m(ratio),
            "BLOCK_D": 64,
            "DOT_FP16": kdt == "fp16",
            "QUANT": quant,
            "ROTATE": rotate,
        }
        cases.append((f"pool {kdt} r={ratio} quant={quant} rotate={rotate}", sig, const))
    return cases


def _indexer_cases() -> list[tuple[str, dict, dict]]:
    cases = []
    for qdt, kdt, topk, limits in [
        ("fp32", "fp32", 256, False),
        ("fp16", "fp16", 16, True),
        ("fp32", "i8", 256, True),
    ]:
        sig = {
            "Q": f"*{qdt}",
            "W": "*fp32",
            "K": f"*{kdt}",
            "S": "*fp32",
            "L": "*i64",
            "OUT": "*i64",
            "N": "i32",
            "H": "i32",
            "D": "i32",
            "span": "i32",
            "n_tiles": "i32",
            "stride_qt": "i32",
            "stride_qh": "i32",
            "stride_wt": "i32",
            "stride_k": "i32",
        }
        const = {
            "BLOCK_H": 16,
            "BLOCK_D": 64,
            "BLOCK_N": max(256, topk),
            "TOPK": topk,
            "INT8": kdt == "i8",
            "DOT_FP16": qdt == "fp16" and kdt != "fp32",
            "HAS_LIMITS": limits,
        }
        cases.append((f"indexer_topk q={qdt} keys={kdt} topk={topk} limits={limits}", sig, const))
    return cases


def main() -> int:
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        print("unset TRITON_INTERPRET: the interpreter replaces compilation", file=sys.stderr)
        return 2
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels.indexer_topk.triton_kernel import _indexer_topk_kernel
    from kernels.pooling.triton_kernel import _pool_kernel

    target = GPUTarget("cuda", 90, 32)
    failures = 0
    for fn, cases in [(_pool_kernel, _pool_cases()), (_indexer_topk_kernel, _indexer_cases())]:
        for name, sig, const in cases:
            t0 = time.perf_counter()
            sig = sig | {c: "constexpr" for c in const}
            try:
                compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const), target=target)
                shared = compiled.metadata.shared
                ok = "cubin" in compiled.asm and shared <= SHARED_MEMORY_LIMIT
                status = "ok" if ok else f"FAIL shared memory {shared} > {SHARED_MEMORY_LIMIT}"
            except Exception as e:  # report every kernel, then fail
                ok, status = False, f"FAIL {type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''}"
            failures += not ok
            print(f"sm_90 {name}: {status} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

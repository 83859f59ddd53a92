"""``indexpool bench``: indexer latency, indexer memory and recall of every method at several lengths, in one run.

Keys and queries come from real text: the shared Gutenberg books and QMSum transcripts (interleaved) through the
pretrained all-MiniLM-L6-v2 encoder (256-token windows, cached by ``textkeys.py``), centred by the mean state of the
first cached shard and projected to d_I with a fixed seeded Gaussian projection P (384, d_I):

    k_s     = (x_s - μ) P                                     indexer key of token s
    q_{t,h} = ((x_t - μ) P) ⊙ e^{0.5 z_h},  z_h ~ N(0, I)     head h re-weights the key features
    w_{t,h} = softmax_h((x_t - μ) · u_h / √384),  u_h ~ N(0, I)

``--key-window W`` (a diagnostic) replaces k_s by the mean of k_{s-W+1..s}: still causal, but smooth at block scale.

Queries are decode steps: the tokens that follow the N-token context in the corpus (positions N + 64 j). Eight
needle sentences are written into the context (their windows re-encoded) and each is asked for by a question encoded
in its own window. Measures, per method (uncompressed, indexpool, indexpool_int8, mean_pool, quest, static,
indexpool_learned — α, β, γ, σ, λ fitted like static — and indexpool_adaptive, whose memory follows its average ratio):
    latency_ms   median of single-query indexer steps (score + top-k + selection), methods interleaved round-robin
    cache_bytes  bytes of the indexer cache (tier 1)
    recall@k     |tokens covered by the method's k/r selected entries ∩ the uncompressed top-k tokens| / k, the
                 sink and local window excluded from both (always selected), averaged over queries
    needle_f1    token F1 between the needle and the method's selection with a budget of the needle's length
                 rounded up to 8 tokens, averaged over the needles
plus the bound "block_oracle": the best recall any selector of aligned r-blocks could reach.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from kernels.indexer_topk import indexer_scores_reference

from .config import IndexPoolConfig
from .indexer import IndexPoolIndexer, Selection
from .pooling import PoolingWeights, StaticPoolingWeights, write_queries
from .textkeys import DEFAULT_DATA, SHARD_WINDOWS, WINDOW, MiniLMEncoder, corpus_token_ids, token_states

NEEDLES = [
    (
        "The secret launch code for the Aurora satellite is 7342.",
        "What is the secret launch code for the Aurora satellite?",
    ),
    (
        "Professor Lindqvist keeps her spare house key under the blue ceramic frog in the garden.",
        "Where does Professor Lindqvist keep her spare house key?",
    ),
    (
        "The winning lottery ticket was bought at a petrol station in Dunmore on a rainy Tuesday.",
        "Where was the winning lottery ticket bought?",
    ),
    (
        "The startup's quarterly revenue grew to 4.8 million dollars thanks to the Helsinki contract.",
        "What was the startup's quarterly revenue?",
    ),
    (
        "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.",
        "What is the best thing to do in San Francisco?",
    ),
    (
        "The password for the encrypted research archive is violet-harbor-1987.",
        "What is the password for the encrypted research archive?",
    ),
    (
        "Captain Okafor ordered the ship to anchor near the lighthouse at Kestrel Point before midnight.",
        "Where did Captain Okafor order the ship to anchor?",
    ),
    (
        "The rare orchid in the museum greenhouse only blooms when the temperature stays above 28 degrees.",
        "When does the rare orchid in the museum greenhouse bloom?",
    ),
]
QUERY_STRIDE = 64  # decode-step queries at N + 64 j
METHOD_ORDER = [
    "uncompressed",
    "indexpool",
    "indexpool_int8",
    "mean_pool",
    "quest",
    "static",
    "indexpool_learned",
    "indexpool_adaptive",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", default="32000,128000,1000000", help="comma-separated context lengths")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    parser.add_argument("--heads", type=int, default=8, help="indexer heads H_I")
    parser.add_argument("--dim", type=int, default=64, help="indexer dimension d_I")
    parser.add_argument("--ratio", type=int, default=4, help="pooling ratio r")
    parser.add_argument("--queries", type=int, default=32, help="decode-step queries for recall")
    parser.add_argument("--steps", type=int, default=21, help="timed single-query steps per method")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (0: torch's default); 1 keeps timings stable on a shared machine",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the projection")
    parser.add_argument(
        "--key-window",
        type=int,
        default=1,
        help="diagnostic: average each indexer key with its W-1 predecessors (causal); 1 = plain token keys",
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the indexer caches live")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder")
    parser.add_argument(
        "--needle-query",
        choices=["last", "mean"],
        default="mean",
        help="question query: its last token's state or the mean of its token states",
    )


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Projection:
    """Seeded map from MiniLM states (n, 384) to indexer keys (n, D), queries (n, H, D) and head weights (n, H)."""

    def __init__(self, mu: torch.Tensor, heads: int, dim: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.mu = mu.float()
        self.P = torch.randn(384, dim, generator=g) / dim**0.5  # (384, D)
        self.head_scale = torch.exp(0.5 * torch.randn(heads, dim, generator=g))  # (H, D)
        self.U = torch.randn(384, heads, generator=g) / 384**0.5  # (384, H)

    def keys(self, states: torch.Tensor, lo: int, hi: int, window: int = 1) -> torch.Tensor:
        """Keys of tokens [lo, hi); window > 1 averages each key with its window - 1 predecessors (causal)."""
        start = max(0, lo - window + 1)
        k = (states[start:hi].float() - self.mu) @ self.P  # (hi - start, D)
        if window > 1:
            c = torch.cat([torch.zeros(1, k.shape[1]), torch.cumsum(k, 0)])  # (hi - start + 1, D)
            i = torch.arange(lo - start, hi - start) + 1
            k = (c[i] - c[(i - window).clamp_min(0)]) / (i - (i - window).clamp_min(0))[:, None]
            return k
        return k[lo - start :]

    def queries(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xc = x.float() - self.mu
        return (xc @ self.P)[:, None, :] * self.head_scale, torch.softmax(xc @ self.U, dim=-1)


def cpu_name() -> str:
    info = Path("/proc/cpuinfo")
    for line in info.read_text().splitlines() if info.exists() else []:
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical cores)"
    return platform.processor() or platform.machine()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_bandwidth(device: torch.device, n_bytes: int = 1 << 28) -> float:
    """Memory read bandwidth in GB/s: median time of summing a buffer much larger than the caches."""
    x = torch.ones(n_bytes // 4, device=device)
    x.sum()
    times = []
    for _ in range(7):
        _sync(device)
        t0 = time.perf_counter()
        x.sum()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return n_bytes / statistics.median(times) / 1e9


def insert_needles(ids: torch.Tensor, states: torch.Tensor, n: int, enc: MiniLMEncoder) -> list[torch.Tensor]:
    """Write each needle into the middle of one window of the first n tokens (depths (i + ½)/8), re-encode those
    windows in place and return each needle's token positions."""
    positions = []
    for i, (fact, _) in enumerate(NEEDLES):
        w = int((i + 0.5) / len(NEEDLES) * n) // WINDOW
        lo = w * WINDOW
        window = ids[lo : lo + WINDOW].clone()
        needle = torch.tensor(enc.tok(" " + fact, add_special_tokens=False)["input_ids"])
        at = (WINDOW - len(needle)) // 2
        window[at : at + len(needle)] = needle
        states[lo : lo + WINDOW] = enc.encode_windows([window])[0].to(states.dtype)
        positions.append(torch.arange(lo + at, lo + at + len(needle)))
    return positions


def recall(sel: Selection, ref: Selection, k: int) -> float:
    vals = []
    for t in range(ref.starts.shape[0]):
        a = ref.scored_tokens(t)
        b = sel.scored_tokens(t)
        vals.append(torch.isin(a, b).sum().item() / k)
    return sum(vals) / len(vals)


def oracle_recall(ref: Selection, n: int, lo: int, hi: int, r: int, k: int) -> float:
    """Best recall of any selection of k / r aligned r-blocks inside [lo, hi): the blocks holding most top-k tokens."""
    vals = []
    for t in range(ref.starts.shape[0]):
        hit = torch.zeros(n)
        hit[ref.scored_tokens(t).cpu()] = 1
        counts = hit[lo // r * r : hi // r * r].reshape(-1, r).sum(1)
        vals.append(counts.topk(min(k // r, counts.numel())).values.sum().item() / k)
    return sum(vals) / len(vals)


def fit_weights(
    module: torch.nn.Module,
    keys: torch.Tensor,
    q_all: torch.Tensor,
    w_all: torch.Tensor,
    proj_q: torch.Tensor,
    proj_w: torch.Tensor,
    r: int,
    steps: int = 60,
) -> None:
    """Train pooling parameters so pooled scores rank blocks like the count of uncompressed top-k tokens in them
    (cross-entropy between the two block distributions). keys (n, D); q_all/w_all per token; proj_q (Tq, H, D)."""
    n = keys.shape[0] // r * r
    blocks = keys[:n].reshape(-1, r, keys.shape[1])  # (NB, r, D)
    u = write_queries(blocks, q_all[r - 1 : n : r], w_all[r - 1 : n : r], "last_query")
    scores = indexer_scores_reference(proj_q, proj_w, keys[:n])  # (Tq, n)
    top = scores.topk(n // 16, dim=1).indices
    hit = torch.zeros_like(scores).scatter_(1, top, 1.0).reshape(scores.shape[0], -1, r).sum(-1)  # (Tq, NB)
    target = hit / hit.sum(1, keepdim=True)
    opt = torch.optim.Adam(module.parameters(), lr=0.05)
    for _ in range(steps):
        w = module(blocks, u)  # (NB, r)
        pooled = (w[..., None] * blocks).sum(1) / w.sum(1, keepdim=True).clamp_min(1e-12)  # (NB, D)
        s = indexer_scores_reference(proj_q, proj_w, pooled)  # (Tq, NB)
        loss = -(target * torch.log_softmax(s / s.std(), dim=1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def build_methods(
    cfg: IndexPoolConfig, static: torch.nn.Module, learned: torch.nn.Module, device: torch.device
) -> dict[str, IndexPoolIndexer]:
    return {
        "uncompressed": IndexPoolIndexer(cfg, "uncompressed", device=device),
        "indexpool": IndexPoolIndexer(cfg, "indexpool", device=device),
        "indexpool_int8": IndexPoolIndexer(replace(cfg, int8=True), "indexpool", device=device),
        "mean_pool": IndexPoolIndexer(cfg, "mean_pool", device=device),
        "quest": IndexPoolIndexer(cfg, "quest", device=device),
        "static": IndexPoolIndexer(cfg, "static", weights=static, device=device),
        "indexpool_learned": IndexPoolIndexer(cfg, "indexpool", weights=learned, device=device),
        "indexpool_adaptive": IndexPoolIndexer(replace(cfg, adaptive=True), "indexpool", device=device),
    }


def run_length(
    n: int,
    keys_all: torch.Tensor,
    states: torch.Tensor,
    proj: Projection,
    cfg: IndexPoolConfig,
    static: torch.nn.Module,
    learned: torch.nn.Module,
    needles: list[torch.Tensor],
    needle_q: list[tuple[torch.Tensor, torch.Tensor]],
    args: argparse.Namespace,
    bandwidth: float,
) -> dict:
    """Build every method over the first n tokens, then measure recall, needle F1, cache bytes and latency."""
    device = torch.device(args.device)
    methods = build_methods(cfg, static, learned, device)
    chunk = 1 << 16
    pool_ms = {}
    for name, ix in methods.items():
        t0 = time.perf_counter()
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            q, w = proj.queries(states[s:e]) if name.startswith("indexpool") else (None, None)
            ix.append(keys_all[s:e], q, w)
        pool_ms[name] = (time.perf_counter() - t0) * 1e3
    log(f"  built {n} tokens: " + ", ".join(f"{k} {v:.0f} ms" for k, v in pool_ms.items()))
    qpos = n + QUERY_STRIDE * torch.arange(args.queries)
    q, w = proj.queries(states[qpos])  # (Tq, H, D), (Tq, H)

    out = {name: {} for name in methods}
    ref = {k: methods["uncompressed"].select(q, w, k) for k in (512, 2048)}
    for name, ix in methods.items():
        for k in (512, 2048):
            out[name][f"recall@{k}"] = round(recall(ix.select(q, w, k), ref[k], k), 4)
        f1s = []
        for pos, (nq, nw) in zip(needles, needle_q, strict=True):
            budget = -(-len(pos) // 8) * 8
            got = ix.select(nq, nw, budget).scored_tokens(0).cpu()
            tp = torch.isin(got, pos).sum().item()
            f1s.append(2 * tp / (got.numel() + len(pos)))
        out[name]["needle_f1"] = round(sum(f1s) / len(f1s), 4)
        out[name]["cache_bytes"] = ix.cache_bytes()
    lo, hi = cfg.sink_tokens, n - cfg.local_tokens
    bounds = {
        f"block_oracle_r{cfg.ratio}": {
            f"recall@{k}": round(oracle_recall(ref[k], n, lo, hi, cfg.ratio, k), 4) for k in (512, 2048)
        }
    }

    times = {name: [] for name in methods}
    for step in range(args.steps + 1):  # round-robin so machine noise hits every method alike; step 0 warms up
        j = step % args.queries
        for name, ix in methods.items():
            qj, wj = q[j : j + 1].to(device), w[j : j + 1].to(device)
            _sync(device)
            t0 = time.perf_counter()
            ix.select(qj, wj, 2048)
            _sync(device)
            if step:
                times[name].append((time.perf_counter() - t0) * 1e3)
    for name in methods:
        out[name]["latency_ms"] = round(statistics.median(times[name]), 3)
    rec = methods["indexpool"].monitor().as_dict()
    adaptive_ratio = methods["indexpool_adaptive"].monitor().average_ratio
    ordered = {
        name: {key: out[name][key] for key in ("latency_ms", "cache_bytes", "recall@512", "recall@2048", "needle_f1")}
        for name in METHOD_ORDER
    }
    return {
        "tokens": n,
        "methods": ordered,
        "roofline_ms": {name: round(out[name]["cache_bytes"] / bandwidth / 1e6, 3) for name in METHOD_ORDER},
        "bounds": bounds,
        "indexpool_monitor": rec,
        "adaptive_average_ratio": round(adaptive_ratio, 3),
    }


def format_table(results: list[dict], setting: dict) -> str:
    lines = [f"setting: {json.dumps(setting)}"]
    for res in results:
        base = res["methods"]["uncompressed"]
        lines.append(f"\ntokens = {res['tokens']:,}")
        lines.append(
            f"{'method':18s} {'latency ms':>10s} {'× unc':>6s} {'roofline ms':>11s} {'cache MB':>9s} "
            f"{'× fp32':>7s} {'R@512':>6s} {'R@2048':>7s} {'needle F1':>9s}"
        )
        for name, m in res["methods"].items():
            lines.append(
                f"{name:18s} {m['latency_ms']:10.2f} {m['latency_ms'] / base['latency_ms']:6.3f} "
                f"{res['roofline_ms'][name]:11.2f} {m['cache_bytes'] / 1e6:9.2f} "
                f"{m['cache_bytes'] / base['cache_bytes']:7.4f} "
                f"{m['recall@512']:6.3f} {m['recall@2048']:7.3f} {m['needle_f1']:9.3f}"
            )
        for name, b in res["bounds"].items():
            lines.append(
                f"{name:18s} {'':>10s} {'':>6s} {'':>11s} {'':>9s} {'':>7s} "
                f"{b['recall@512']:6.3f} {b['recall@2048']:7.3f}   (bound for any r-block selector)"
            )
        bw = setting["bandwidth_GBps"]
        roof = "; ".join(
            f"{name} {m['cache_bytes'] / 1e6:.1f} MB → {res['roofline_ms'][name]:.2f} ms "
            f"(measured {m['latency_ms']:.2f} ms)"
            for name, m in res["methods"].items()
            if name in ("uncompressed", "indexpool", "indexpool_int8")
        )
        lines.append(f"roofline (bytes read per step ÷ measured {bw} GB/s): {roof}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.device == "cuda" and not torch.cuda.is_available():
        print("indexpool bench: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = sorted(int(t) for t in args.tokens.split(","))
    shard = WINDOW * SHARD_WINDOWS
    need = lengths[-1] + QUERY_STRIDE * args.queries + 1
    n_load = -(-need // shard) * shard  # whole shards: every prefix reuses the cache
    log(f"loading {n_load:,} tokens of text and their MiniLM states (cached per shard)")
    try:
        ids = corpus_token_ids(n_load, args.data)
    except (FileNotFoundError, ValueError) as e:
        print(f"indexpool bench: {e} (pass --data with the shared data folder)", file=sys.stderr)
        return 2
    states = token_states(ids, args.device)  # (n_load, 384) float16
    proj = Projection(states[:shard].float().mean(0), args.heads, args.dim, args.seed)
    kw = args.key_window
    keys_all = torch.cat([proj.keys(states, s, min(n_load, s + shard), kw) for s in range(0, n_load, shard)])
    cfg = IndexPoolConfig(n_heads=args.heads, head_dim=args.dim, ratio=args.ratio)
    bandwidth = measure_bandwidth(torch.device(args.device))
    setting = {
        "heads": args.heads,
        "d_I": args.dim,
        "ratio": args.ratio,
        "dtype": "float32 keys (int8 for *_int8)",
        "threads": torch.get_num_threads(),
        "queries": args.queries,
        "steps": args.steps,
        "cpu": cpu_name(),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "bandwidth_GBps": round(bandwidth, 2),
        "encoder": "all-MiniLM-L6-v2 token states, 256-token windows",
        "min_length": cfg.min_length,
        "key_window": kw,
        "sink_tokens": cfg.sink_tokens,
        "local_tokens": cfg.local_tokens,
    }
    log(f"setting: {setting}")

    t0 = time.perf_counter()  # fit static / learned pooling weights on a slice disjoint from the eval queries
    n_fit = 16384
    fq, fw = proj.queries(states[n_fit + 16 * torch.arange(64)])
    q_fit, w_fit = proj.queries(states[:n_fit])
    static, learned = StaticPoolingWeights(args.ratio), PoolingWeights(cfg)
    fit_weights(static, keys_all[:n_fit], q_fit, w_fit, fq, fw, args.ratio)
    fit_weights(learned, keys_all[:n_fit], q_fit, w_fit, fq, fw, args.ratio)
    log(
        f"fitted pooling weights in {time.perf_counter() - t0:.1f} s: static {static.logits.softmax(0).tolist()}, "
        f"learned α β γ σ λ {[round(float(p.detach()), 3) for p in learned.parameters()]}"
    )

    enc = MiniLMEncoder(device=args.device)
    questions = []
    for _, question in NEEDLES:
        _, qs = enc.encode_text(question)
        x = qs[-1:] if args.needle_query == "last" else qs.mean(0, keepdim=True)
        questions.append(proj.queries(x))
    results = []
    for n in lengths:
        t0 = time.perf_counter()
        st = states.clone()
        needles = insert_needles(ids, st, n, enc)
        keys = keys_all.clone()
        for pos in needles:  # keys that see a re-encoded window
            lo = int(pos[0]) // WINDOW * WINDOW
            hi = min(n_load, lo + WINDOW + kw - 1)
            keys[lo:hi] = proj.keys(st, lo, hi, kw)
        results.append(run_length(n, keys, st, proj, cfg, static, learned, needles, questions, args, bandwidth))
        log(f"tokens {n}: {time.perf_counter() - t0:.1f} s")
    for res in results:
        res["setting"] = setting
    table = format_table(results, setting)
    if args.json:
        log(table)
        print(json.dumps(results, indent=1))
    else:
        print(table)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="indexpool bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())

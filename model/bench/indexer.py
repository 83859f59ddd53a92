"""``indexpool bench``: indexer latency, indexer memory and recall of every method at several lengths, in one run.

Keys and queries come from real text: the shared Gutenberg books and QMSum transcripts (documents shuffled with seed
0), through one of two encoders (``--keys``):

``model`` (the default when the checkpoint loads): the shipped IndexPool model (``model/assets/indexpool.pt``, or
``$INDEXPOOL_CHECKPOINT``, or ``--checkpoint``). The text, in the model's sentencepiece tokens, streams through the
model's chunked prefill (chunks of 4096 tokens); the keys, queries and head weights are what the indexer of one
hybrid layer (``--layer``, default the last) computes from that layer's sparse-stream input h:

    k_s     = mean(index_k(h_{s-W+1}), …, index_k(h_s))   (d_I,)  W: the model's indexer_key_window
    q_{t,h} = index_q(h_t)_h                                 (H_I, d_I)
    w_{t,h} = index_w(h_t)_h · H_I^-½                        its learned per-head weights

H_I, d_I, r, the sink and the local window are the model's. ``indexpool`` (and ``_int8``, ``_adaptive``) pool with the
layer's trained pooling weights (α, β, γ, σ, λ), the write-time content query being the block's last token's query,
as in the model; the run checks that its pooled keys equal the model's own indexer cache (``model_cache_max_diff``).
Needle questions get the indexer queries the model's question read gives them (``QuestionQueries`` of the layer, on
the question's states through the stack; ``ModelIndexerKeys.question_queries``).

``minilm``: the pretrained all-MiniLM-L6-v2 encoder (256-token windows, cached by ``textkeys.py``), centred by the mean
state of the first cached shard and projected to d_I with a fixed seeded Gaussian projection P (384, d_I):

    k_s     = (x_s - μ) P                                     indexer key of token s
    q_{t,h} = ((x_t - μ) P) ⊙ e^{0.5 z_h},  z_h ~ N(0, I)     head h re-weights the key features
    w_{t,h} = softmax_h((x_t - μ) · u_h / √384),  u_h ~ N(0, I)

``--key-window W`` (a diagnostic) replaces k_s by the mean of k_{s-W+1..s}: still causal, but smooth at block scale
(with ``--keys model`` it smooths the model's keys once more).

Queries are decode steps: the tokens that follow the N-token context in the corpus (positions N + 64 j). Eight
needle sentences are written into the context (MiniLM: their windows re-encoded; model: the stream re-encoded) and
each is asked for by a question (MiniLM: encoded in its own window). Measures, per method (uncompressed, indexpool,
indexpool_int8, mean_pool, quest, static, indexpool_learned — α, β, γ, σ, λ fitted in the bench like static — and
indexpool_adaptive, whose memory follows its average ratio):
    latency_ms   median of single-query indexer steps (score + top-k + selection), methods interleaved round-robin
    cache_bytes  bytes of the indexer cache (tier 1)
    recall@k     |tokens covered by the method's k/r selected entries ∩ the uncompressed top-k tokens| / k, the
                 sink and local window excluded from both (always selected), averaged over queries
    needle_f1    token F1 between the needle and the method's selection with a budget of the needle's length
                 rounded up to 8 tokens, averaged over the needles
plus the bound "block_oracle": the best recall any selector of aligned r-blocks could reach, and ``key_stats``: the
mean cosine between neighbouring keys (raw and centred), how smooth the keys are at block scale, and
``query_overlap@2048``, the mean share of the uncompressed top-2048 tokens two decode queries have in common (near
1: the indexer ranks tokens the same whatever the query).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
from torch import nn

from kernels.indexer_topk import indexer_scores_reference
from model.bench.keys import (
    SHARD_WINDOWS,
    WINDOW,
    MiniLMEncoder,
    ModelIndexerKeys,
    corpus_name,
    corpus_token_ids,
    token_states,
)
from model.network.indexpool.config import IndexPoolConfig
from model.network.indexpool.indexer import IndexPoolIndexer, Selection
from model.network.indexpool.pooling import PoolingWeights, StaticPoolingWeights, write_queries
from model.network.paths import indexpool_checkpoint

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
    parser.add_argument(
        "--keys",
        choices=["model", "minilm"],
        default=None,
        help="key source: the shipped model's indexer (default when the checkpoint loads) or MiniLM states",
    )
    parser.add_argument(
        "--checkpoint", type=Path, default=None, help="model checkpoint (default $INDEXPOOL_CHECKPOINT or the asset)"
    )
    parser.add_argument("--layer", type=int, default=None, help="model keys: hybrid layer (default the last)")
    parser.add_argument("--heads", type=int, default=8, help="indexer heads H_I (MiniLM keys; model: the model's)")
    parser.add_argument("--dim", type=int, default=64, help="indexer dimension d_I (MiniLM keys; model: the model's)")
    parser.add_argument("--ratio", type=int, default=4, help="pooling ratio r (model keys: must be the model's)")
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
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="read the shared data's Gutenberg books + QMSum meetings from this folder (e.g. ../shared/data); "
        "default: the Python standard library's documentation every install has",
    )
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
    cfg: IndexPoolConfig,
    static: nn.Module,
    learned: nn.Module,
    device: torch.device,
    trained: nn.Module | None = None,
) -> dict[str, IndexPoolIndexer]:
    """Every method; ``trained`` (the model's pooling weights) replaces IndexPool's default α, β, γ, σ, λ."""
    return {
        "uncompressed": IndexPoolIndexer(cfg, "uncompressed", device=device),
        "indexpool": IndexPoolIndexer(cfg, "indexpool", weights=trained, device=device),
        "indexpool_int8": IndexPoolIndexer(replace(cfg, int8=True), "indexpool", weights=trained, device=device),
        "mean_pool": IndexPoolIndexer(cfg, "mean_pool", device=device),
        "quest": IndexPoolIndexer(cfg, "quest", device=device),
        "static": IndexPoolIndexer(cfg, "static", weights=static, device=device),
        "indexpool_learned": IndexPoolIndexer(cfg, "indexpool", weights=learned, device=device),
        "indexpool_adaptive": IndexPoolIndexer(
            replace(cfg, adaptive=True), "indexpool", weights=trained, device=device
        ),
    }


@dataclass
class LengthData:
    """What one context length needs: keys of (at least) its n tokens, their queries for pooling, the decode-step
    queries, the needles' positions and their questions' queries."""

    keys: torch.Tensor  # (≥ n, D)
    queries: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]  # tokens [lo, hi) → (T, H, D), (T, H)
    q: torch.Tensor  # (Tq, H, D) decode-step queries
    w: torch.Tensor  # (Tq, H)
    needles: list[torch.Tensor]  # token positions of each needle
    needle_q: list[tuple[torch.Tensor, torch.Tensor]]  # per needle: its question's query (1, H, D), (1, H)
    model_t1: torch.Tensor | None = None  # the model's own pooled entries of the context, to check IndexPool against


def key_stats(keys: torch.Tensor) -> dict:
    """Mean cosine between neighbouring keys, raw and centred (minus the mean key): smoothness at block scale."""
    k = keys.float()
    raw = torch.nn.functional.cosine_similarity(k[:-1], k[1:], dim=-1).mean()
    c = k - k.mean(0)
    centred = torch.nn.functional.cosine_similarity(c[:-1], c[1:], dim=-1).mean()
    return {"neighbour_cosine": round(float(raw), 4), "neighbour_cosine_centred": round(float(centred), 4)}


def query_overlap(ref: Selection) -> float:
    """Mean share of the reference top-k tokens two decode queries have in common, over all pairs of queries:
    1 = every query selects the same tokens (a query-independent ranking)."""
    sets = [ref.scored_tokens(t) for t in range(ref.starts.shape[0])]
    vals = [torch.isin(a, b).float().mean().item() for i, a in enumerate(sets) for b in sets[i + 1 :] if a.numel()]
    return round(sum(vals) / len(vals), 4) if vals else 1.0


def run_length(
    n: int,
    data: LengthData,
    cfg: IndexPoolConfig,
    static: nn.Module,
    learned: nn.Module,
    trained: nn.Module | None,
    args: BenchOptions,
    bandwidth: float,
) -> dict:
    """Build every method over the first n tokens, then measure recall, needle F1, cache bytes and latency."""
    device = torch.device(args.device)
    methods = build_methods(cfg, static, learned, device, trained)
    chunk = 1 << 16
    pool_ms = {}
    for name, ix in methods.items():
        t0 = time.perf_counter()
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            q, w = data.queries(s, e) if name.startswith("indexpool") else (None, None)
            ix.append(data.keys[s:e], q, w)
        pool_ms[name] = (time.perf_counter() - t0) * 1e3
    log(f"  built {n} tokens: " + ", ".join(f"{k} {v:.0f} ms" for k, v in pool_ms.items()))
    q, w = data.q, data.w  # (Tq, H, D), (Tq, H)

    out = {name: {} for name in methods}
    ref = {k: methods["uncompressed"].select(q, w, k) for k in (512, 2048)}
    for name, ix in methods.items():
        for k in (512, 2048):
            out[name][f"recall@{k}"] = round(recall(ix.select(q, w, k), ref[k], k), 4)
        f1s = []
        for pos, (nq, nw) in zip(data.needles, data.needle_q, strict=True):
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
        j = step % q.shape[0]
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
    result = {
        "tokens": n,
        "methods": ordered,
        "roofline_ms": {name: round(out[name]["cache_bytes"] / bandwidth / 1e6, 3) for name in METHOD_ORDER},
        "bounds": bounds,
        "indexpool_monitor": rec,
        "adaptive_average_ratio": round(adaptive_ratio, 3),
        "key_stats": {**key_stats(data.keys[:n]), "query_overlap@2048": query_overlap(ref[2048])},
    }
    if data.model_t1 is not None:  # IndexPool's pooled keys against the model's own indexer cache
        mine = methods["indexpool"].t1.data[: data.model_t1.shape[0]].cpu()
        result["model_cache_max_diff"] = float((mine - data.model_t1).abs().max()) if mine.numel() else 0.0
    return result


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
        ks = res["key_stats"]
        extra = (
            f"keys: neighbour cosine {ks['neighbour_cosine']:.3f} (centred {ks['neighbour_cosine_centred']:.3f}); "
            f"uncompressed top-2048 shared by two queries {ks['query_overlap@2048']:.3f}"
        )
        if "model_cache_max_diff" in res:
            extra += (
                f"; indexpool entries vs the model's own indexer cache: max |diff| {res['model_cache_max_diff']:.2e}"
            )
        lines.append(extra)
        bw = setting["bandwidth_GBps"]
        roof = "; ".join(
            f"{name} {m['cache_bytes'] / 1e6:.1f} MB → {res['roofline_ms'][name]:.2f} ms "
            f"(measured {m['latency_ms']:.2f} ms)"
            for name, m in res["methods"].items()
            if name in ("uncompressed", "indexpool", "indexpool_int8")
        )
        lines.append(f"roofline (bytes read per step ÷ measured {bw} GB/s): {roof}")
    return "\n".join(lines)


def insert_needle_ids(ids: torch.Tensor, n: int, encode: Callable[[str], list[int]]):
    """Token-stream version of ``insert_needles`` (same depths and offsets): a copy of ids with each needle's tokens
    written over the middle of its window, and each needle's token positions."""
    ids, positions = ids.clone(), []
    for i, (fact, _) in enumerate(NEEDLES):
        needle = torch.tensor(encode(" " + fact), dtype=ids.dtype)
        at = int((i + 0.5) / len(NEEDLES) * n) // WINDOW * WINDOW + (WINDOW - len(needle)) // 2
        ids[at : at + len(needle)] = needle
        positions.append(torch.arange(at, at + len(needle)))
    return ids, positions


def causal_window(keys: torch.Tensor, window: int) -> torch.Tensor:
    """Each key averaged with its window - 1 predecessors (float64 running sums).  (n, D) → (n, D)"""
    if window <= 1:
        return keys
    c = torch.cat([torch.zeros(1, keys.shape[1], dtype=torch.float64), torch.cumsum(keys.double(), 0)])
    i = torch.arange(1, keys.shape[0] + 1)
    j = (i - window).clamp_min(0)
    return ((c[i] - c[j]) / (i - j)[:, None]).to(keys.dtype)


N_FIT = 16384  # static / learned pooling weights are fitted on the first tokens, away from the eval queries
FIT_POS = N_FIT + 16 * torch.arange(64)


class SetupError(ValueError):
    """The key source cannot be used as asked (checkpoint, layer, ratio)."""


class MiniLMKeys:
    """Keys and queries from MiniLM token states through the seeded projection (see the module docstring)."""

    def __init__(self, args: BenchOptions, need: int) -> None:
        shard = WINDOW * SHARD_WINDOWS
        n_load = -(-need // shard) * shard  # whole shards: every prefix reuses the cache
        log(f"loading {n_load:,} tokens of text and their MiniLM states (cached per shard)")
        self.ids = corpus_token_ids(n_load, args.data)
        self.states = token_states(self.ids, args.device)  # (n_load, 384) float16
        self.proj = Projection(self.states[:shard].float().mean(0), args.heads, args.dim, args.seed)
        self.kw = args.key_window
        self.keys_all = torch.cat(
            [self.proj.keys(self.states, s, min(n_load, s + shard), self.kw) for s in range(0, n_load, shard)]
        )
        self.cfg = IndexPoolConfig(n_heads=args.heads, head_dim=args.dim, ratio=args.ratio)
        self.trained = None
        self.setting = {
            "keys": "minilm",
            "encoder": "all-MiniLM-L6-v2 token states, 256-token windows",
            "heads": args.heads,
            "d_I": args.dim,
            "ratio": args.ratio,
        }
        self.device = args.device
        self.needle_query = args.needle_query
        self.enc: MiniLMEncoder | None = None
        self.questions: list[tuple[torch.Tensor, torch.Tensor]] = []

    def fit_data(self):
        """keys (N_FIT, D), per-token queries (N_FIT, H, D) and head weights, fit queries (64, H, D) and weights."""
        fq, fw = self.proj.queries(self.states[FIT_POS])
        q_fit, w_fit = self.proj.queries(self.states[:N_FIT])
        return self.keys_all[:N_FIT], q_fit, w_fit, fq, fw

    def length(self, n: int, qpos: torch.Tensor) -> LengthData:
        if self.enc is None:
            self.enc = MiniLMEncoder(device=self.device)
            for _, question in NEEDLES:
                _, qs = self.enc.encode_text(question)
                x = qs[-1:] if self.needle_query == "last" else qs.mean(0, keepdim=True)
                self.questions.append(self.proj.queries(x))
        st = self.states.clone()
        needles = insert_needles(self.ids, st, n, self.enc)
        keys = self.keys_all.clone()
        n_load = keys.shape[0]
        for pos in needles:  # keys that see a re-encoded window
            lo = int(pos[0]) // WINDOW * WINDOW
            hi = min(n_load, lo + WINDOW + self.kw - 1)
            keys[lo:hi] = self.proj.keys(st, lo, hi, self.kw)
        q, w = self.proj.queries(st[qpos])
        return LengthData(keys, lambda s, e: self.proj.queries(st[s:e]), q, w, needles, self.questions)


class ModelKeys:
    """Keys and queries from the shipped model's indexer at one layer, streaming the text through its prefill."""

    def __init__(self, args: BenchOptions, need: int, tap: ModelIndexerKeys) -> None:
        self.tap = tap
        log(f"loading {need:,} tokens of text (model tokenizer)")
        self.ids = corpus_token_ids(need, args.data, tap.encode)
        self.cfg = tap.indexpool_config()
        self.trained = tap.pool_weights
        self.kw, self.needle_query = args.key_window, args.needle_query
        self.question_ids = [tap.encode(question) for _, question in NEEDLES]
        trained = {n: round(float(p.detach()), 4) for n, p in tap.pool_weights.named_parameters()}
        self.setting = {
            "keys": "model",
            "encoder": f"IndexPool hybrid model, layer {tap.layer} indexer (index_k / index_q / index_w of the "
            f"sparse-stream input) in streaming prefill, chunks of {tap.chunk_tokens} tokens; sentencepiece tokens",
            "layer": tap.layer,
            "checkpoint": str(tap.checkpoint),
            "checkpoint_sha256": tap.checkpoint_sha256,
            "weights_id": tap.cfg.weights_id,
            "heads": tap.heads,
            "d_I": tap.dim,
            "ratio": tap.ratio,
            "model_key_window": tap.cfg.indexer_key_window,
            "trained_pooling": trained,
        }

    def fit_data(self):
        r = self.tap.ratio
        s = self.tap.stream(self.ids, N_FIT, FIT_POS)  # needle-free, like the MiniLM fit
        q_fit, w_fit = s.queries(0, N_FIT, r)
        return causal_window(s.keys, self.kw), q_fit, w_fit, s.q, s.w

    def length(self, n: int, qpos: torch.Tensor) -> LengthData:
        t0 = time.perf_counter()
        ids, needles = insert_needle_ids(self.ids, n, self.tap.encode)
        s = self.tap.stream(ids, n, qpos, self.question_ids)
        log(f"  model prefill of {int(qpos.max()) + 1:,} tokens: {time.perf_counter() - t0:.1f} s")
        if self.needle_query == "last":
            questions = [(q[-1:], w[-1:]) for q, w in s.questions]
        else:
            questions = [(q.mean(0, keepdim=True), w.mean(0, keepdim=True)) for q, w in s.questions]
        r = self.tap.ratio
        own = s.model_t1 if self.kw == 1 else None
        return LengthData(
            causal_window(s.keys, self.kw), lambda lo, hi: s.queries(lo, hi, r), s.q, s.w, needles, questions, own
        )


def key_source(args: BenchOptions, need: int):
    """The key source of ``--keys`` (default: the model when its checkpoint loads, else MiniLM, with a note)."""
    if args.keys == "minilm":
        return MiniLMKeys(args, need)
    ckpt = args.checkpoint or indexpool_checkpoint()
    try:
        tap = ModelIndexerKeys(ckpt, args.layer)
    except Exception as e:  # a missing or unreadable checkpoint: the default falls back to MiniLM
        if args.keys == "model" or args.layer is not None:
            raise SetupError(f"model keys: {ckpt}: {e}") from e
        log(f"note: the model checkpoint {ckpt} did not load ({e}); using MiniLM keys (--keys minilm)")
        return MiniLMKeys(args, need)
    if args.ratio != tap.ratio:
        raise SetupError(f"model keys: --ratio {args.ratio}, but the model pools with r = {tap.ratio}")
    return ModelKeys(args, need, tap)


@dataclass
class BenchOptions:
    """The benchmark's settings (the ``indexpool bench`` flags; see ``add_arguments`` for each one's meaning)."""

    tokens: str = "32000,128000,1000000"
    keys: str | None = None
    checkpoint: Path | None = None
    layer: int | None = None
    heads: int = 8
    dim: int = 64
    ratio: int = 4
    queries: int = 32
    steps: int = 21
    threads: int = 1
    seed: int = 0
    key_window: int = 1
    device: str = "cpu"
    data: Path | None = None  # None: the Python stdlib docs (model.bench.keys.corpus_name)
    needle_query: str = "mean"


def run_benchmark(args: BenchOptions) -> list[dict]:
    """One result per length (``--json``'s list), each with the run's ``setting``; SetupError when the keys or the
    device cannot be had."""
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SetupError("--device cuda but torch sees no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = sorted(int(t) for t in args.tokens.split(","))
    need = max(lengths[-1] + QUERY_STRIDE * args.queries + 1, int(FIT_POS[-1]) + 1)
    try:
        source = key_source(args, need)
    except (FileNotFoundError, ValueError) as e:
        if isinstance(e, SetupError):
            raise
        raise SetupError(str(e)) from e
    cfg = source.cfg
    bandwidth = measure_bandwidth(torch.device(args.device))
    setting = {
        **source.setting,
        "corpus": corpus_name(args.data),
        "dtype": "float32 keys (int8 for *_int8)",
        "threads": torch.get_num_threads(),
        "queries": args.queries,
        "steps": args.steps,
        "cpu": cpu_name(),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "bandwidth_GBps": round(bandwidth, 2),
        "min_length": cfg.min_length,
        "key_window": args.key_window,
        "sink_tokens": cfg.sink_tokens,
        "local_tokens": cfg.local_tokens,
    }
    log(f"setting: {setting}")

    t0 = time.perf_counter()  # fit static / learned pooling weights on a slice disjoint from the eval queries
    k_fit, q_fit, w_fit, fq, fw = source.fit_data()
    static, learned = StaticPoolingWeights(cfg.ratio), PoolingWeights(cfg)
    fit_weights(static, k_fit, q_fit, w_fit, fq, fw, cfg.ratio)
    fit_weights(learned, k_fit, q_fit, w_fit, fq, fw, cfg.ratio)
    log(
        f"fitted pooling weights in {time.perf_counter() - t0:.1f} s: static {static.logits.softmax(0).tolist()}, "
        f"learned α β γ σ λ {[round(float(p.detach()), 3) for p in learned.parameters()]}"
    )
    results = []
    for n in lengths:
        t0 = time.perf_counter()
        qpos = n + QUERY_STRIDE * torch.arange(args.queries)
        data = source.length(n, qpos)
        keys_s = time.perf_counter() - t0
        results.append(run_length(n, data, cfg, static, learned, source.trained, args, bandwidth))
        results[-1]["keys_s"] = round(keys_s, 1)
        del data
        log(f"tokens {n}: {time.perf_counter() - t0:.1f} s (keys {keys_s:.1f} s)")
    for res in results:
        res["setting"] = setting
    return results


def run(args: argparse.Namespace) -> int:
    """``indexpool bench``: the table (or JSON) of ``run_benchmark``."""
    options = BenchOptions(**{f.name: getattr(args, f.name) for f in fields(BenchOptions)})
    try:
        results = run_benchmark(options)
    except SetupError as e:
        print(f"indexpool bench: {e}", file=sys.stderr)
        return 2
    table = format_table(results, results[0]["setting"])
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

"""Questions over the embedded sample asked by one process and by N gloo ranks on this machine, in one run:
latency per question (p50, p95, their ratio), whether the answers are identical, and each process's peak RSS.

    python scripts/bench_shards.py --home /tmp/shards-bench [--shards 2] [--limit MODULES] [--repeat 2]

The home gets the sample library (``indexpool sample``) and every document's index the first time (minutes); the
timed questions are the demo's twenty (``app.services.sample.SAMPLE_QUESTIONS``), each asked ``--repeat`` times
after one warm-up pass per reader.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from app.services import Services
from app.services.sample import SAMPLE_QUESTIONS, build_sample
from app.services.shards import ShardGroup, threads_per_rank
from ingest.stdlib_docs import STDLIB_COLLECTION


def _peak_mib(pid: int) -> float:
    """A process's peak resident memory (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _timed(services: Services, questions: list[str], repeat: int) -> tuple[list[float], list[Any]]:
    for question in questions:  # warm: the model, the indexes and read caches in memory
        services.ask.ask([STDLIB_COLLECTION], question, top_k=5)
    times, answers = [], []
    for _ in range(repeat):
        for question in questions:
            started = time.perf_counter()
            answer = services.ask.ask([STDLIB_COLLECTION], question, top_k=5)
            times.append((time.perf_counter() - started) * 1e3)
            answers.append([(c.doc, c.start, c.end, c.score) for c in answer.citations])
    return times, answers


def _p(times: list[float], q: float) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--limit", type=int, help="only the sample's first N modules")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    services = Services(args.home)
    if not services.library.collections():
        build_sample(services, limit=args.limit, progress=print)
    documents = [d for d, _, _ in services.ask.library.ingested_documents()]
    started = time.perf_counter()
    built = services.indexes.build(documents, progress=lambda done, total, s: print(f"  indexed {done}/{total}"))
    tokens = sum(tokens for _, tokens in services.ask.library.document_sizes())
    print(f"{len(documents)} documents, {tokens:,} tokens ({built} indexed now, {time.perf_counter() - started:.0f} s)")
    questions = [q for q, _ in SAMPLE_QUESTIONS]

    one, one_answers = _timed(services, questions, args.repeat)
    single_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    torch.set_num_threads(threads_per_rank(args.shards))  # as `serve --shards` gives rank 0 (OMP_NUM_THREADS)
    group = ShardGroup.spawn(services.ask.library, services.indexes, args.shards)
    try:
        services.ask.use_shards(group)
        many, many_answers = _timed(services, questions, args.repeat)
        ranks_peak = [_peak_mib(p.pid) for p in group.processes]
    finally:
        group.close()
    same = sum(a == b for a, b in zip(one_answers, many_answers, strict=True))
    print(f"questions: {len(one)} timed ({len(questions)} × {args.repeat}); identical answers: {same}/{len(one)}")
    print("| reader | p50 ms | p95 ms | × one process p50 |")
    print("|---|---:|---:|---:|")
    print(f"| one process | {_p(one, 50):.1f} | {_p(one, 95):.1f} | 1.00 |")
    ratio = _p(many, 50) / _p(one, 50)
    print(f"| {args.shards} ranks (gloo) | {_p(many, 50):.1f} | {_p(many, 95):.1f} | {ratio:.2f} |")
    print(
        f"peak RSS MiB: rank 0 (the app, after both) {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f}"
        f" (after one process {single_peak:,.0f}); ranks 1..: {', '.join(f'{m:,.0f}' for m in ranks_peak)}"
    )


if __name__ == "__main__":
    main()

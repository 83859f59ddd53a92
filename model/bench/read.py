"""``indexpool bench-read``: questions over an indexed collection as the app answers them, through the read cache.

    indexpool bench-read                     # 1M tokens of the Python stdlib docs, 20 related questions
    indexpool bench-read --tokens 200000 --questions 10

The collection (the embedded sample's text: the Python standard library's documentation, the modules the questions
ask about first, then the rest in a seeded order, up to ``--tokens`` tokens) is indexed once as the app indexes it
(``CollectionIndex.build``: a recording prefill per document) and saved under the bench cache: the index arrays and
each document's store (keys and values, float16, tier 3), which the sessions memory-map. Each session runs in a
fresh process (its peak RSS is its own) and asks the questions in order, each as ``AskService`` does: encode the
question, read the collection through the cache (select over tier 1, fetch through tiers 2-3, attend), score and
pick the cited sentences. Sessions:

- ``indexpool`` — the default cache (IndexPool 4:1 INT8), tier 2 = ``--tier2`` of the store's bytes;
- ``uncompressed`` — the baseline in the same run: every token's indexer key scored (r = 1), the same tier 2;
- ``tier2=0`` and ``tier2=100%`` — the default cache with no tier 2 and with room for the whole store: the
  citations must equal those of ``indexpool`` (answers do not depend on the budget).

It prints per session p50/p95 answer latency (ms), per-stage medians, the tier-2 hit rate of every question after
the first, bytes read from disk, peak RSS, and the latency ratio to the baseline. ``--json`` writes it all.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from model.bench.keys import CACHE_DIR, corpus_documents

QUESTIONS = [
    "How do I read a CSV file with a header row into dictionaries?",
    "How do I write rows of values to a CSV file?",
    "Which CSV dialect options control the delimiter and quoting?",
    "How do I parse a JSON document from a string?",
    "How do I serialize an object to JSON with indentation?",
    "How do I run a function after a delay in another thread?",
    "How do I start a thread and wait for it to finish?",
    "How do I protect shared data with a lock between threads?",
    "How do I run a command in a subprocess and capture its output?",
    "How do I set a timeout on a subprocess?",
    "How do I compress data with gzip?",
    "How do I list the members of a zip archive?",
    "How do I parse command line arguments with optional flags?",
    "How do I add a subcommand to an argument parser?",
    "How do I format a date and time as a string?",
    "How do I compute the difference between two dates?",
    "How do I join path components and get a file's suffix?",
    "How do I check whether a path exists and is a directory?",
    "What does zip do with strict=True when the iterables differ in length?",
    "How do I sort a list of dictionaries by a key?",
]
MODULES = ("csv", "json", "threading", "subprocess", "gzip", "zipfile", "argparse", "datetime", "pathlib", "builtins")
SESSIONS = ("indexpool", "uncompressed", "tier2=0", "tier2=100%")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", type=int, default=1_000_000, help="collection size in tokens (default 1M)")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="questions per session (max 20)")
    parser.add_argument("--tier2", type=float, default=0.10, help="tier-2 budget as a share of the store's bytes")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--session", choices=SESSIONS, help=argparse.SUPPRESS)  # one session, in this process
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def collection_texts(tokens: int, encode) -> list[tuple[str, str]]:
    """(name, text) of the stdlib modules: those the questions ask about first, then a seeded order, until
    ``tokens`` tokens."""
    corpus_documents(None)  # writes the stdlib docs once
    files = sorted((CACHE_DIR / "stdlib").glob("*.txt"))
    first = [f for m in MODULES for f in files if f.stem == m]
    rest = [f for f in files if f not in first]
    random.Random(0).shuffle(rest)
    out, total = [], 0
    for f in first + rest:
        text = f.read_text(encoding="utf-8")
        out.append((f.stem, text))
        total += len(encode(text))
        if total >= tokens:
            return out
    raise SystemExit(f"indexpool bench-read: the stdlib docs hold {total:,} tokens, fewer than {tokens:,}")


def build(folder: Path, tokens: int) -> None:
    """Index the collection and save it under ``folder`` (skipped when it is there)."""
    from ingest.segment import segment
    from model.inference.passages import DocumentText
    from model.inference.qa import CollectionIndex
    from model.network.checkpoint import load_model

    if (folder / "complete").exists():
        return
    model = load_model()
    texts = collection_texts(tokens, model.tokenizer.encode)
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for i, (name, text) in enumerate(texts):
        sentences = segment(text).sentences  # the library's sentences and passages
        document = DocumentText.of(name, text, [(x.start, x.end) for x in sentences], [x.paragraph for x in sentences])
        part = CollectionIndex.build(model, [document])
        (store,) = part.stores
        np.save(folder / f"{i}.kv.npy", store.kv)
        np.save(folder / f"{i}.keys.npy", store.keys)
        part.stores = None
        parts.append(part)
        if i % 20 == 0:
            log(f"bench-read: indexed {i + 1} of {len(texts)} documents ({time.perf_counter() - started:.0f} s)")
    index = CollectionIndex.concat(parts)
    np.savez(folder / "index.npz", **index.to_arrays())
    meta = {
        "documents": len(texts),
        "tokens": int(index.document_tokens.sum()),
        "build_s": time.perf_counter() - started,
    }
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "complete").touch()
    log(f"bench-read: indexed {meta['tokens']:,} tokens in {meta['build_s']:.0f} s")


def session(folder: Path, name: str, questions: int, tier2: float) -> dict:
    """One session in this process: load the saved index (stores memory-mapped), ask the questions."""
    import torch

    from model.inference.qa import CollectionIndex, Question, answer, read, read_cache
    from model.inference.read import CacheConfig, DocumentStore
    from model.network.checkpoint import load_model
    from model.network.indexpool import KVTiers

    torch.set_num_threads(2)
    model = load_model()
    meta = json.loads((folder / "meta.json").read_text())
    stores = [
        DocumentStore(np.load(folder / f"{i}.kv.npy", mmap_mode="r"), np.load(folder / f"{i}.keys.npy", mmap_mode="r"))
        for i in range(meta["documents"])
    ]
    arrays = dict(np.load(folder / "index.npz"))
    index = CollectionIndex.from_arrays(arrays, arrays["document_ids"].tolist(), model.weights_id, stores)
    kv_bytes = sum(s.kv.nbytes for s in stores)
    budget = {"tier2=0": 0.0, "tier2=100%": 1.0}.get(name, tier2)
    config = CacheConfig(method="uncompressed", min_tokens=0) if name == "uncompressed" else CacheConfig()
    started = time.perf_counter()
    cache = read_cache(model, index, config, KVTiers(int(budget * kv_bytes)))
    pool_s = time.perf_counter() - started
    rows = []
    for text in QUESTIONS[:questions]:
        started = time.perf_counter()
        q = Question.encode(model, text)
        encoded = time.perf_counter()
        reading = read(model, index, cache, q)
        read_done = time.perf_counter()
        hits = answer(model, index, q, 5, reading)
        done = time.perf_counter()
        rows.append(
            {
                "question": text,
                "ms": (done - started) * 1e3,
                "stages_ms": {
                    "encode_question": (encoded - started) * 1e3,
                    **{f"read_{k}": v for k, v in reading.timings_ms.items()},
                    "score_and_cite": (done - read_done) * 1e3,
                },
                "hit_rate": reading.tiers.hit_rate,
                "bytes_read": reading.tiers.bytes_read,
                "tokens_read": reading.tokens_read,
                "citations": [(h.passage, h.sentence) for h in hits],
            }
        )
    return {
        "session": name,
        "tokens": int(index.document_tokens.sum()),
        "tier2_bytes": int(budget * kv_bytes),
        "kv_bytes": kv_bytes,
        "tier1_bytes": cache.tier1_bytes,
        "pool_s": pool_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "questions": rows,
    }


def summary(result: dict) -> dict:
    ms = np.array([q["ms"] for q in result["questions"]])
    later = [q["hit_rate"] for q in result["questions"][1:]]
    stages = {
        k: float(np.median([q["stages_ms"][k] for q in result["questions"]]))
        for k in result["questions"][0]["stages_ms"]
    }
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "hit_rate_after_first": float(np.mean(later)) if later else float("nan"),
        "mib_read": sum(q["bytes_read"] for q in result["questions"]) / 2**20,
        "stage_medians_ms": stages,
    }


def run(args: argparse.Namespace) -> int:
    from model.inference.qa import FORMAT
    from model.network.checkpoint import load_model

    folder = args.folder or CACHE_DIR / f"read-{args.tokens}-{load_model().weights_id}-index{FORMAT}"
    if args.session:
        print(json.dumps(session(folder, args.session, args.questions, args.tier2)))
        return 0
    build(folder, args.tokens)
    results = {}
    for name in SESSIONS:
        log(f"bench-read: session {name}")
        command = [sys.executable, "-m", "model.bench.read", "--session", name, "--folder", str(folder)]
        command += ["--questions", str(args.questions), "--tier2", str(args.tier2)]
        out = subprocess.run(command, check=True, capture_output=True, text=True)
        results[name] = json.loads(out.stdout)
        results[name]["summary"] = summary(results[name])
    base = results["uncompressed"]["summary"]
    meta = json.loads((folder / "meta.json").read_text())
    print(
        f"bench-read: {meta['tokens']:,} tokens of Python stdlib docs ({meta['documents']} documents, indexed in "
        f"{meta['build_s']:.0f} s), {args.questions} questions, tier 2 = {args.tier2:.0%} of the store"
    )
    header = ("p50 ms", "p95 ms", "×base p50", "hit rate", "MiB read", "tier1 MiB", "RSS MiB")
    print(f"{'session':14} " + " ".join(f"{h:>9}" for h in header))
    for name, r in results.items():
        s = r["summary"]
        print(
            f"{name:14} {s['p50_ms']:9.1f} {s['p95_ms']:9.1f} {s['p50_ms'] / base['p50_ms']:9.3f} "
            f"{100 * s['hit_rate_after_first']:8.1f}% {s['mib_read']:9.1f} {r['tier1_bytes'] / 2**20:9.1f} "
            f"{r['peak_rss_mb']:9.0f}"
        )
    stages = results["indexpool"]["summary"]["stage_medians_ms"]
    print("indexpool stage medians (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
    cited = [[q["citations"] for q in results[n]["questions"]] for n in ("indexpool", "tier2=0", "tier2=100%")]
    same = cited[0] == cited[1] == cited[2]
    print(f"citations with tier 2 = 0, {args.tier2:.0%} and 100% of the store: {'identical' if same else 'DIFFER'}")
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "tier2": args.tier2, "results": results, "identical": same}))
    return 0 if same else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""Ten million tokens in one library: build time, answer latency, peak RSS and recall@5 of QMSum questions whose
evidence is known, the rest of the library their distractors; IndexPool beside BM25, 1M beside 10M tokens, one
process beside N gloo ranks, all in one run.

    python scripts/bench_scale.py --data ../shared/data --home /tmp/scale [--tokens 10000000] [--questions 50]
        [--shards 2] [--json OUT]

The library (built once into ``--home``; a rerun reuses it and reports the build it recorded) holds, in this order,
the QMSum val meetings (the questions' documents), then distractors drawn in turn from the QMSum train meetings,
ScisummNet papers, SumPubMed articles and Project Gutenberg books, until ``--tokens``. Documents are stored in
collections of 1M tokens each (``scale-01`` … ``scale-10``): ``scale-01`` holds every meeting asked about, so
the same questions over ``scale-01`` alone are the 1M-token run, over every part the 10M-token run, from one build
(an index is per document). Build = ingest (parse, segment, store) + index (``IndexService.build``).

The questions: ``--questions`` QMSum val specific queries, spread over the meetings (every k-th), plus one more
asked first to warm the process. Each session runs in a fresh process (its peak RSS is its own) and asks them as the
app does (``AskService.ask``, top 5); a question is found at 5 when one of its five cited sentences overlaps one of
its evidence turns. Sessions: ``indexpool`` over 1M and over all, ``bm25`` over the same, ``shards`` (``--shards``
gloo ranks, ``ShardGroup.spawn``) over all, and ``add``: one more document (the first the library had no room for)
ingested into the last part and indexed (the count of documents indexed then: 1), one question over all, and the
document removed again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PART_TOKENS = 1_000_000
COLLECTION = "scale-{:02d}"


# ------------------------------------------------------------------------------------------------ the corpus


def _meetings(split_dir: Path, asked: bool) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    from model.research.evaluation.datasets import qmsum_meeting

    for path in sorted(split_dir.glob("*.json")):
        document, questions = qmsum_meeting(path.stem, json.loads(path.read_text(encoding="utf-8")))
        yield f"qmsum/{path.stem}", document["title"], document["text"], questions if asked else []


def _papers(data: Path) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    from model.research.evaluation.datasets import scisumm_paper

    for paper_dir in sorted((data / "scisumm" / "papers").iterdir()):
        try:
            paper = scisumm_paper(paper_dir)
        except (OSError, ValueError):  # a paper without its XML or abstract
            continue
        yield f"scisumm/{paper_dir.name}", paper["title"], paper["text"], []


def _articles(data: Path) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    for path in sorted((data / "sumpubmed_sample" / "text").glob("*.txt")):
        yield f"sumpubmed/{path.name}", "", path.read_text(encoding="utf-8", errors="replace"), []


def _books(data: Path) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    for path in sorted((data / "gutenberg_nltk17" / "texts").glob("*.txt")):
        yield f"gutenberg/{path.name}", "", path.read_text(encoding="utf-8", errors="replace"), []


def corpus(data: Path) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    """(source, title, text, questions): the val meetings, then the distractor sources in turn."""
    yield from _meetings(data / "qmsum" / "val", asked=True)
    sources = [_meetings(data / "qmsum" / "train", asked=False), _papers(data), _articles(data), _books(data)]
    while sources:
        for source in list(sources):
            item = next(source, None)
            if item is None:
                sources.remove(source)
            else:
                yield item


def _moved(text: str, offset: int) -> int:
    """Where character ``offset`` of ``text`` lands in ``normalize_text(text)`` (whitespace is tidied)."""
    from ingest.clean import normalize_text

    return len(normalize_text(text[:offset] + "x")) - 1


def build(data: Path, home: Path, tokens: int) -> dict[str, Any]:
    """Ingest and index the library of ``tokens`` tokens into ``home``; the questions' evidence in stored text."""
    from app.services import Services
    from ingest.clean import normalize_text
    from ingest.pipeline import parse_text
    from model.tokenizer import load_tokenizer

    services, tokenizer = Services(home), load_tokenizer()
    questions: list[dict[str, Any]] = []
    parts: dict[str, list[Any]] = {}
    part_tokens: dict[str, int] = {}
    asked_texts: dict[str, str] = {}
    total, part, held_out = 0, 1, None
    started = time.perf_counter()
    for source, title, text, asked in corpus(data):
        count = tokenizer.count(text)
        if total + count > tokens:
            held_out = held_out or (source, title, text)
            if total >= tokens * 0.995:
                break
            continue
        if total + count > part * PART_TOKENS and total > 0 and not asked:
            part += 1
        stored = normalize_text(text)
        if asked:
            asked_texts[source] = stored
        for q in asked:
            if q["kind"] == "specific":
                spans = [(_moved(text, e["start"]), _moved(text, e["end"])) for e in q["evidence"]]
                questions.append({"id": q["id"], "question": q["question"], "source": source, "evidence": spans})
        digest = hashlib.sha256(stored.encode("utf-8", "surrogatepass")).hexdigest()
        parsed = parse_text(source, title, "txt", stored, digest)
        parts.setdefault(COLLECTION.format(part), []).append(parsed)
        part_tokens[COLLECTION.format(part)] = part_tokens.get(COLLECTION.format(part), 0) + count
        total += count
    for name, documents in parts.items():
        for event in services.ingest.ingest_texts(documents, name):
            if event.status not in ("ingested", "unchanged"):  # unchanged: a build that stopped, run again
                raise SystemExit(f"{event.source}: {event.status} {event.message}")
        print(f"  {name}: {len(documents)} documents ingested", flush=True)
    for document in services.library.ingested(COLLECTION.format(1)):  # the evidence spans index the stored text
        if (
            document.source in asked_texts
            and services.library.document(document.id).text != asked_texts[document.source]
        ):
            raise SystemExit(f"{document.source}: the stored text differs from the text its evidence spans index")
    ingest_s = time.perf_counter() - started
    ids = [document_id for document_id, _, _ in services.library.library.ingested_documents()]
    started = time.perf_counter()
    services.indexes.build(ids, progress=_every(100))
    index_s = time.perf_counter() - started
    record = {
        "tokens": sum(t for _, t in services.library.library.document_sizes()),
        "documents": len(ids),
        "parts": sorted(parts),
        "part_tokens": part_tokens,
        "ingest_s": round(ingest_s, 1),
        "index_s": round(index_s, 1),
        "build_s": round(ingest_s + index_s, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "questions": questions,
        "held_out": held_out,
    }
    (home / "bench-scale.json").write_text(json.dumps(record))
    return record


def _every(n: int):  # noqa: ANN202 (a progress callback)
    def report(done: int, total: int, seconds: float) -> None:
        if done % n == 0 or done == total:
            print(f"  indexed {done}/{total} documents ({seconds:.0f} s)", flush=True)

    return report


# ------------------------------------------------------------------------------------------------ a session


def session(home: Path, name: str, scope: str, picked: list[dict[str, Any]], shards: int) -> dict[str, Any]:
    """One session's figures (run in a process of its own)."""
    from app.services import Services
    from app.services.shards import ShardGroup

    services = Services(home)
    record = json.loads((home / "bench-scale.json").read_text())
    parts = record["parts"] if scope == "all" else record["parts"][:1]
    reader = "bm25" if name == "bm25" else "indexpool"
    ids = {d.source: d.id for part in parts for d in services.library.ingested(part)}
    group = ShardGroup.spawn(services.ask.library, services.indexes, shards) if name == "shards" else None
    try:
        if group is not None:
            services.ask.use_shards(group)
        result: dict[str, Any] = {"session": name, "scope": scope, "collections": len(parts)}
        if name == "add":
            return result | _add(services, record, parts, picked[-1])
        started = time.perf_counter()
        services.ask.ask(parts, picked[0]["question"], top_k=5, reader=reader)  # warm: load the indexes
        result["first_ms"] = round((time.perf_counter() - started) * 1e3)
        times, found, cited = [], [], []
        for q in picked[1:]:
            started = time.perf_counter()
            answer = services.ask.ask(parts, q["question"], top_k=5, reader=reader)
            times.append((time.perf_counter() - started) * 1e3)
            document = ids[q["source"]]
            found.append(
                any(c.doc == document and c.start < b and a < c.end for c in answer.citations for a, b in q["evidence"])
            )
            cited.append([(c.doc, c.start, c.end) for c in answer.citations])
        return result | {
            "questions": len(times),
            "recall@5": sum(found) / len(found),
            "p50_ms": round(_p(times, 50), 1),
            "p95_ms": round(_p(times, 95), 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "rank_peak_rss_mib": [round(_peak_mib(p.pid)) for p in group.processes] if group else [],
            "cited": cited,
        }
    finally:
        if group is not None:
            group.close()


def _add(services: Any, record: dict[str, Any], parts: list[str], question: dict[str, Any]) -> dict[str, Any]:
    """One held-out document into the last part: how many documents indexing it indexes, and the next answer."""
    from app.services.indexes import store_key
    from ingest.clean import normalize_text
    from ingest.pipeline import parse_text
    from model.network.checkpoint import load_model

    def prune() -> None:  # the files of an earlier run's added document (its id comes again) are not found
        live = [(d, h) for d, h, _ in services.library.library.ingested_documents()]
        services.indexes.store.prune(store_key(load_model()), live)

    prune()
    source, title, text = record["held_out"]
    text = normalize_text(text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    started = time.perf_counter()
    events = list(services.ingest.ingest_texts([parse_text(source, title, "txt", text, digest)], parts[-1]))
    ingest_s = time.perf_counter() - started
    document_id = events[0].document_id
    try:
        every = [d for d, _, _ in services.library.library.ingested_documents()]
        started = time.perf_counter()
        indexed = services.indexes.build(every)
        index_s = time.perf_counter() - started
        started = time.perf_counter()
        services.ask.ask(parts, question["question"], top_k=5, reader="indexpool")
        ask_ms = (time.perf_counter() - started) * 1e3
    finally:
        services.library.remove(parts[-1], [str(document_id)])
        prune()
    return {
        "added": source,
        "added_tokens": events[0].tokens,
        "indexed_documents": indexed,
        "ingest_s": round(ingest_s, 1),
        "index_s": round(index_s, 1),
        "next_ask_ms": round(ask_ms),
    }


def _p(times: list[float], q: int) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[q - 1]


def _peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pick(questions: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` + 1 questions spread over the meetings (seeded), the first for warming up."""
    rng = random.Random(0)
    chosen = sorted(rng.sample(range(len(questions)), min(n + 1, len(questions))))
    return [questions[i] for i in chosen]


# ------------------------------------------------------------------------------------------------ the run


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the shared data folder")
    parser.add_argument("--home", type=Path, required=True, help="the library's home (built once, then reused)")
    parser.add_argument("--tokens", type=int, default=10_000_000, help="the library's size when built")
    parser.add_argument("--questions", type=int, default=50, help="QMSum questions timed and scored")
    parser.add_argument("--shards", type=int, default=2, help="gloo ranks of the shards session")
    parser.add_argument(
        "--sessions",
        default="indexpool:first,indexpool:all,bm25:first,bm25:all,shards:all,add:all",
        help='session:scope list, scope "first" (the first 1M-token collection) or "all"; "" builds only',
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--session", help=argparse.SUPPRESS)  # name:scope, run in a child process
    args = parser.parse_args()
    built = args.home / "bench-scale.json"
    if args.session:
        name, scope = args.session.split(":")
        picked = pick(json.loads(built.read_text())["questions"], args.questions)
        print(json.dumps(session(args.home, name, scope, picked, args.shards)))
        return
    if built.is_file():
        record = json.loads(built.read_text())
        print(f"reusing the library of {args.home} (built in {record['build_s']:.0f} s)")
    else:
        if not args.data.is_dir():
            raise SystemExit(f"{args.data}: the shared data folder is missing (QMSum, ScisummNet, ...)")
        record = build(args.data, args.home, args.tokens)
    print(
        f"library: {record['tokens']:,} tokens, {record['documents']} documents in {len(record['parts'])} parts; "
        f"build {record['build_s']:.0f} s (ingest {record['ingest_s']:.0f} s + index {record['index_s']:.0f} s), "
        f"peak RSS {record['peak_rss_mib']:,} MiB",
        flush=True,
    )
    results = []
    for spec in filter(None, args.sessions.split(",")):  # --sessions "": build only
        command = [sys.executable, __file__, "--home", str(args.home), "--session", spec]
        command += ["--questions", str(args.questions), "--shards", str(args.shards)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"session {spec} failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(result)
        shown = {k: v for k, v in result.items() if k != "cited"}
        print(f"{spec}: {json.dumps(shown)}", flush=True)
    _table(record, results)
    if args.json:
        record = {k: v for k, v in record.items() if k != "questions"}
        args.json.write_text(json.dumps({"library": record, "sessions": results}, indent=2))


def _table(record: dict[str, Any], results: list[dict[str, Any]]) -> None:
    first = record["part_tokens"][record["parts"][0]]
    print("\n| reader | tokens | recall@5 | p50 ms | p95 ms | first question ms | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        if "recall@5" not in r:
            continue
        tokens = record["tokens"] if r["scope"] == "all" else first
        reader = (
            f"indexpool, {len(r['rank_peak_rss_mib']) + 1} gloo ranks" if r["session"] == "shards" else r["session"]
        )
        ranks = "".join(f" + rank {i}: {m:,}" for i, m in enumerate(r["rank_peak_rss_mib"], start=1))
        print(
            f"| {reader} | {tokens:,} | {r['recall@5']:.3f} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} "
            f"| {r['first_ms']:,} | {r['peak_rss_mib']:,}{ranks} |"
        )
    by = {(r["session"], r["scope"]): r for r in results}
    one, many = by.get(("indexpool", "all")), by.get(("shards", "all"))
    if one and many:
        same = sum(a == b for a, b in zip(one["cited"], many["cited"], strict=True))
        print(
            f"\nshards vs one process over all: p50 ratio {many['p50_ms'] / one['p50_ms']:.2f}, "
            f"{same}/{len(one['cited'])} answers identical"
        )


if __name__ == "__main__":
    main()

"""Encode time, answer latency and peak RSS of the IndexPool reader over a 1M+-token library.

    python scripts/bench_model_qa.py build --home H    # ingest 13 Gutenberg books, ask once
    python scripts/bench_model_qa.py ask --home H      # a fresh process: 21 asks on the saved index

Run each phase under ``/usr/bin/time -v`` for the peak RSS of the whole process; the script prints its own
``ru_maxrss`` too. ``build`` replaces ``H``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from app.services import Services

BOOKS = [
    "melville-moby_dick",
    "austen-emma",
    "austen-persuasion",
    "austen-sense",
    "carroll-alice",
    "chesterton-thursday",
    "chesterton-ball",
    "chesterton-brown",
    "shakespeare-hamlet",
    "shakespeare-macbeth",
    "shakespeare-caesar",
    "edgeworth-parents",
    "bryant-stories",
]
QUESTIONS = [
    "Who is the captain of the Pequod?",
    "What did Emma think of Mr. Elton?",
    "Where does Alice meet the Cheshire Cat?",
    "Why does Hamlet delay his revenge?",
    "What happens at the ball in Persuasion?",
    "Who wrote the letter to Elinor?",
    "What did the witches tell Macbeth?",
    "How does Brutus justify killing Caesar?",
    "What is the white whale called?",
    "What did Sunday reveal at the end?",
]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(home: Path, data: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)
    services = Services(home)
    with tempfile.TemporaryDirectory() as books:
        for name in BOOKS:
            shutil.copy(data / "gutenberg_nltk17" / "texts" / f"{name}.txt", books)
        started = time.perf_counter()
        events = list(services.ingest([Path(books)], "books"))
        ingest_s = time.perf_counter() - started
    tokens = sum(d.tokens for d in services.documents("books"))
    print(f"ingested {len(events)} files, {tokens:,} tokens in {ingest_s:.1f} s")
    started = time.perf_counter()
    answer = services.ask(["books"], QUESTIONS[0], reader="indexpool")
    print(
        f"first ask (encodes the collection, saves its index): {time.perf_counter() - started:.1f} s, "
        f"timings {answer.timings_ms}, peak RSS {peak_rss_mb():.0f} MB"
    )


def ask(home: Path) -> None:
    services = Services(home)
    latencies = []
    for i in range(21):
        started = time.perf_counter()
        services.ask(["books"], QUESTIONS[i % len(QUESTIONS)], reader="indexpool")
        latencies.append((time.perf_counter() - started) * 1000)
    print(
        f"first ask (loads the model and the index) {latencies[0]:.0f} ms; the other 20: "
        f"p50 {statistics.median(latencies[1:]):.1f} ms, max {max(latencies[1:]):.1f} ms; "
        f"peak RSS {peak_rss_mb():.0f} MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["build", "ask"])
    parser.add_argument("--home", type=Path, required=True, help="library folder (replaced by build)")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    if args.phase == "build":
        build(args.home, args.data)
    else:
        ask(args.home)
    return 0


if __name__ == "__main__":
    sys.exit(main())

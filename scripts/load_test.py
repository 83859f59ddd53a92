"""Load test (not a test of the suite): N concurrent askers call a running app's ``/ask`` API for D seconds.

    indexpool serve --home HOME &                       # a library with a collection
    python scripts/load_test.py http://127.0.0.1:7860 --collection python-stdlib --askers 50 --seconds 60

Each asker has its own gradio_client connection and asks the questions below in turn. Prints one JSON object:
requests, errors (with the first messages), throughput, and latency percentiles measured at the client.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gradio_client import Client  # noqa: E402 (after the analytics switch)

QUESTIONS = [
    "How do I read a CSV file with a header row into dictionaries?",
    "How can I run a function after a delay in another thread?",
    "What does the strict parameter of zip do?",
    "How do I parse command line options with subcommands?",
    "Which function returns the current time in seconds since the epoch?",
    "How can I compress a file with gzip?",
    "What exception is raised when a key is missing from a dictionary?",
    "How do I create a temporary directory that is removed automatically?",
]


def asker(
    url: str,
    collection: str,
    deadline: float,
    latencies: list[float],
    errors: list[str],
    lock: threading.Lock,
    offset: int,
) -> None:
    client = Client(url, verbose=False)
    i = offset
    while time.monotonic() < deadline:
        question = QUESTIONS[i % len(QUESTIONS)]
        i += 1
        started = time.perf_counter()
        try:
            answer, _citations, _timing = client.predict([collection], question, api_name="/ask")
            failed = answer.startswith("**Error")
        except Exception as error:  # a failed request is what we count, whatever its kind
            failed, answer = True, f"{type(error).__name__}: {error}"
        elapsed = (time.perf_counter() - started) * 1000
        with lock:
            (errors.append(answer[:200]) if failed else latencies.append(elapsed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--collection", default="python-stdlib")
    parser.add_argument("--askers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + args.seconds
    threads = [
        threading.Thread(target=asker, args=(args.url, args.collection, deadline, latencies, errors, lock, n))
        for n in range(args.askers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    ordered = sorted(latencies)

    def percentile(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))], 1) if ordered else float("nan")

    print(
        json.dumps(
            {
                "askers": args.askers,
                "seconds": round(wall, 1),
                "requests": len(latencies) + len(errors),
                "errors": len(errors),
                "first_errors": errors[:3],
                "requests_per_s": round(len(latencies) / wall, 1),
                "latency_ms": {
                    "p50": percentile(50),
                    "p95": percentile(95),
                    "max": round(max(ordered, default=0), 1),
                    "mean": round(statistics.fmean(ordered), 1) if ordered else None,
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

"""The embedded default: a library built from the Python standard library's own pydoc text."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.services import Services
from app.services.ingest import IngestSummary
from ingest.stdlib_docs import STDLIB_COLLECTION, write_stdlib_corpus

# The demo's example questions, each with the modules whose documentation answers it (a package counts with its
# submodules): ``indexpool demo`` asks the first ten, and a test checks where the model's first citation is.
SAMPLE_QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("How do I read a CSV file with a header row into dictionaries?", ("csv",)),
    ("How can I run a function after a delay in another thread?", ("threading",)),
    ("What does the strict parameter of zip do?", ("builtins",)),
    ("How do I parse command-line options and arguments?", ("argparse", "optparse", "getopt")),
    ("How do I compute a SHA-256 hash of some bytes?", ("hashlib",)),
    ("How do I create a temporary directory that is removed afterwards?", ("tempfile",)),
    ("How do I serialize a Python object to a JSON string?", ("json",)),
    ("How do I count how many times each item occurs in a list?", ("collections",)),
    ("How do I find all matches of a regular expression in a string?", ("re",)),
    ("How do I copy a whole directory tree?", ("shutil",)),
    ("How do I create an in-memory SQLite database?", ("sqlite3",)),
    ("How do I compress a file with gzip?", ("gzip",)),
    ("How do I send an email over SMTP?", ("smtplib",)),
    ("How do I pick a random sample of items from a list?", ("random",)),
    ("How can I cache the results of an expensive function call?", ("functools",)),
    ("How do I run a shell command and capture its output?", ("subprocess",)),
    ("How do I measure the execution time of small code snippets?", ("timeit",)),
    ("How do I compare two sequences and show their differences?", ("difflib",)),
    ("How do I encode binary data as base64 text?", ("base64", "binascii")),
    ("How do I read a ZIP archive's members?", ("zipfile",)),
]


def sample_module(source: str) -> str:
    """The module whose documentation a sample document is: ``…/stdlib/json.encoder.txt`` → ``json.encoder``."""
    return Path(source).stem


def answers_from(module: str, modules: tuple[str, ...]) -> bool:
    """Whether ``module`` is one of ``modules`` or a submodule of one."""
    return any(module == m or module.startswith(m + ".") for m in modules)


def build_sample(
    services: Services, limit: int | None = None, progress: Callable[[str], Any] | None = None
) -> dict[str, Any]:
    """Write the stdlib corpus (once) under the library folder and ingest it as ``python-stdlib``, shared with every
    user of the app."""
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    corpus_dir = services.home / "sample" / ("stdlib" if limit is None else f"stdlib-{limit}")
    marker = corpus_dir / ".complete"
    if not marker.exists():
        say(f"writing the Python standard library documentation to {corpus_dir} ...")

        def report(done: int, total: int, name: str) -> None:
            if done == total or done % 50 == 0:
                say(f"  pydoc {done}/{total} modules ({name})")

        write_stdlib_corpus(corpus_dir, progress=report, limit=limit)
        marker.touch()
    say(f"ingesting {corpus_dir} into collection '{STDLIB_COLLECTION}' ...")
    events = []
    for event in services.ingest.ingest([corpus_dir], STDLIB_COLLECTION):
        events.append(event)
        if event.status == "error" or event.index == event.total or event.index % 100 == 0:
            say(f"  [{event.index}/{event.total}] {event.source}: {event.status} {event.message}".rstrip())
    summary = IngestSummary.of(events, time.perf_counter() - started)
    services.library.share(STDLIB_COLLECTION, True)  # the embedded sample is every user's to read
    info = next(c for c in services.library.collections() if c.name == STDLIB_COLLECTION)
    say(
        f"sample library '{STDLIB_COLLECTION}': {info.documents} documents, {info.tokens:,} tokens, "
        f"{info.sentences:,} sentences ({summary.seconds:.0f} s)"
    )
    return {
        "collection": STDLIB_COLLECTION,
        "documents": info.documents,
        "tokens": info.tokens,
        "sentences": info.sentences,
        "seconds": round(summary.seconds, 1),
        "errors": summary.errors,
    }

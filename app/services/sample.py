"""The embedded default: a library built from the Python standard library's own pydoc text."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from app.services import Services
from app.services.ingest import IngestSummary
from ingest.stdlib_docs import STDLIB_COLLECTION, write_stdlib_corpus


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

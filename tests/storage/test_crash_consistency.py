"""Killing ingestion at any moment leaves a consistent library: every document whole, or absent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from storage.library import Library
from storage.models import Document, SentenceRow


def check_consistent(library: Library) -> int:
    """Assert the invariants a crash must not break; returns the number of ingested documents."""
    with library.session() as session:
        documents = list(session.scalars(select(Document)))
        for document in documents:
            sentences = session.scalar(
                select(func.count()).select_from(SentenceRow).where(SentenceRow.document_id == document.id)
            )
            if document.status == "ingested":
                assert sentences == document.sentence_count > 0 and document.tokens > 0
                assert len(document.text) == document.chars
            else:
                assert sentences == 0 and document.error
        indexed = session.scalar(text("SELECT count(*) FROM sentences_fts_docsize"))
        assert indexed == session.scalar(select(func.count()).select_from(SentenceRow))
        assert session.scalar(text("PRAGMA integrity_check")) == "ok"
    return sum(d.status == "ingested" for d in documents)


@pytest.mark.parametrize("kill_after", [1, 25, 50])
def test_kill_during_ingest_leaves_library_consistent(home: Path, tmp_path: Path, kill_after: int) -> None:
    books = tmp_path / "books"
    books.mkdir()
    paragraph = "The whale surfaced near the ship and the crew watched in silence. " * 40 + "\n\n"
    for i in range(60):
        (books / f"book-{i:02d}.txt").write_text(f"Book {i}\n\n" + paragraph * (20 + i), encoding="utf-8")
    command = [sys.executable, "-m", "app.cli", "--home", str(home), "ingest", str(books), "--collection", "b"]
    command.append("--no-index")  # what a crash does to the library; indexing has its own tests
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
    )
    assert process.stdout is not None
    for _ in range(kill_after):  # one progress line per stored file
        assert process.stdout.readline()
    os.killpg(process.pid, signal.SIGKILL)  # the CLI and its parsing workers, while the next files are written
    process.wait()

    library = Library(home)
    before = check_consistent(library)
    assert kill_after <= before < 60

    # The interrupted batch can simply be run again: it completes without duplicates.
    assert subprocess.run(command, capture_output=True).returncode == 0
    assert check_consistent(Library(home)) == 60

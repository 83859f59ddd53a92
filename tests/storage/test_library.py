"""The library store: one transaction per document, no-op re-ingest, replacement, removal, BM25 search, the
sentences the readers cite, schema version and upgrades."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from ingest.document import Page, ParsedDocument, Section, Sentence
from storage.db import StorageError
from storage.library import Library
from storage.models import SCHEMA_VERSION, AnswerRow, Document, Meta, PageRow, SentenceRow


def make_document(source: str, sentences: list[str], page_of: list[int] | None = None) -> ParsedDocument:
    """A parsed document whose text is the sentences joined by spaces."""
    text = " ".join(sentences)
    spans, cursor = [], 0
    for i, sentence in enumerate(sentences):
        page = page_of[i] if page_of else None
        spans.append(Sentence(cursor, cursor + len(sentence), page, 0, i))
        cursor += len(sentence) + 1
    pages = [Page(n, 0, len(text)) for n in sorted(set(page_of))] if page_of else []
    return ParsedDocument(
        source=source,
        title=Path(source).stem,
        kind="txt",
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        text=text,
        pages=pages,
        sections=[Section("Body", "body", 0, len(text))],
        sentences=spans,
    )


@pytest.fixture
def library(tmp_path: Path) -> Library:
    return Library(tmp_path / "home")


def count(library: Library, model: type) -> int:
    with library.session() as session:
        return session.scalar(select(func.count()).select_from(model))


def fts_rows(library: Library) -> int:
    with library.session() as session:
        return session.scalar(text("SELECT count(*) FROM sentences_fts WHERE sentences_fts MATCH 'zebra OR lion'"))


def test_store_then_search_cites_exact_spans(library: Library) -> None:
    doc = make_document("/a.txt", ["The zebra runs fast.", "A lion sleeps all day.", "Nothing here."], [1, 1, 2])
    result = library.store("zoo", doc, tokens=12)
    assert result.status == "ingested" and library.document(result.document_id).tokens == 12
    hits = library.search_sentences(["zoo"], "Where does the lion sleep?", limit=3)
    assert hits and hits[0].text == "A lion sleeps all day."
    stored = library.document(hits[0].document_id, with_text=True)
    assert stored is not None and stored.text[hits[0].start : hits[0].end] == hits[0].text
    assert hits[0].page == 1
    refs = library.sentences_at([(result.document_id, 2), (result.document_id, 0)])
    assert [(r.idx, r.page, r.text) for r in refs] == [(2, 2, "Nothing here."), (0, 1, "The zebra runs fast.")]
    assert library.sentence_spans(result.document_id) == [(s.start, s.end, s.paragraph) for s in doc.sentences]
    with pytest.raises(StorageError, match="changed or left the library"):
        library.sentences_at([(result.document_id, 3)])


def test_unchanged_is_a_noop_and_changed_replaces(library: Library) -> None:
    first = library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]))
    again = library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]))
    assert again.status == "unchanged" and again.document_id == first.document_id
    changed = library.store("zoo", make_document("/a.txt", ["A lion sleeps all day."]))
    assert changed.status == "replaced"
    assert count(library, Document) == 1
    assert [h.text for h in library.search_sentences(["zoo"], "zebra", 5)] == []
    assert fts_rows(library) == 1


def test_same_content_under_another_name_is_a_duplicate(library: Library) -> None:
    library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]))
    assert library.store("zoo", make_document("/b.txt", ["The zebra runs fast."])).status == "duplicate"
    assert library.store("other", make_document("/b.txt", ["The zebra runs fast."])).status == "ingested"


def test_remove_document_removes_rows_and_index(library: Library) -> None:
    result = library.store("zoo", make_document("/a.txt", ["The zebra runs fast.", "A lion."], [1, 2]))
    library.remove_document(result.document_id)
    assert count(library, Document) == count(library, SentenceRow) == count(library, PageRow) == 0
    assert fts_rows(library) == 0
    with pytest.raises(StorageError, match="no document"):
        library.remove_document(result.document_id)


def test_remove_collection(library: Library) -> None:
    library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]))
    library.store("zoo", make_document("/b.txt", ["A lion sleeps."]))
    assert library.remove_collection("zoo") == 2
    assert library.collection_names() == []
    with pytest.raises(StorageError, match="no collection named 'zoo'"):
        library.search_sentences(["zoo"], "lion", 1)


def test_failed_insert_leaves_the_old_version(library: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]))

    def broken_insert(*_args: object) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(library, "_insert_document", broken_insert)
    with pytest.raises(RuntimeError):
        library.store("zoo", make_document("/a.txt", ["A lion sleeps all day."]))
    hits = library.search_sentences(["zoo"], "zebra", 5)
    assert [h.text for h in hits] == ["The zebra runs fast."]


def test_error_keeps_earlier_good_version(library: Library) -> None:
    good = library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]))
    result = library.record_error("zoo", "/a.txt", "damaged")
    assert result.document_id == good.document_id and "kept" in result.message
    assert library.document(good.document_id).status == "ingested"
    failed = library.record_error("zoo", "/b.pdf", "encrypted: needs a password")
    assert library.document(failed.document_id).status == "error"
    infos = {c.name: c for c in library.collections()}
    assert infos["zoo"].documents == 1 and infos["zoo"].errors == 1


def test_schema_version_is_checked(tmp_path: Path) -> None:
    library = Library(tmp_path)
    with library.session() as session, session.begin():
        session.get(Meta, "schema_version").value = "999"
    with pytest.raises(StorageError, match="schema version 999"):
        Library(tmp_path)


def test_a_version_1_library_is_upgraded_in_place(tmp_path: Path) -> None:
    library = Library(tmp_path)  # make it look like a library written by schema version 1: no answers.generated
    with library.session() as session, session.begin():
        session.execute(text("ALTER TABLE answers DROP COLUMN generated"))
        session.execute(text("ALTER TABLE citations DROP COLUMN speaker"))
        session.execute(
            text(
                "INSERT INTO answers (question, collections, answer, reader, settings, timings_ms, created_at) "
                "VALUES ('Why?', '[]', 'Because.', 'bm25', '{}', '{}', '2026-01-01 00:00:00')"
            )
        )
        session.get(Meta, "schema_version").value = "1"
    upgraded = Library(tmp_path)
    with upgraded.session() as session:
        assert session.get(Meta, "schema_version").value == str(SCHEMA_VERSION)
        row = session.scalars(select(AnswerRow)).one()
        assert (row.answer, row.generated) == ("Because.", None)  # what was stored survives the upgrade


def test_a_version_2_library_loses_its_unread_token_arrays(tmp_path: Path) -> None:
    library = Library(tmp_path)
    stored = library.store("zoo", make_document("/a.txt", ["The zebra runs fast."]), tokens=5)
    with library.session() as session, session.begin():  # as schema version 2 wrote it
        session.execute(text("ALTER TABLE documents ADD COLUMN array_file TEXT"))
        session.execute(text("ALTER TABLE sentences ADD COLUMN token_start INTEGER NOT NULL DEFAULT 0"))
        session.execute(text("ALTER TABLE sentences ADD COLUMN token_end INTEGER NOT NULL DEFAULT 0"))
        session.execute(text("ALTER TABLE citations DROP COLUMN speaker"))
        session.execute(text("UPDATE documents SET array_file = 'x.npz'"))
        session.get(Meta, "schema_version").value = "2"
    (tmp_path / "arrays").mkdir()
    (tmp_path / "arrays" / "x.npz").write_bytes(b"token ids nobody read")
    upgraded = Library(tmp_path)
    with upgraded.session() as session:
        assert session.get(Meta, "schema_version").value == str(SCHEMA_VERSION)
        columns = {row[1] for row in session.execute(text("PRAGMA table_info(documents)"))}
    assert "array_file" not in columns and not (tmp_path / "arrays").exists()
    assert [h.text for h in upgraded.search_sentences(["zoo"], "zebra", 1)] == ["The zebra runs fast."]
    assert upgraded.document(stored.document_id).tokens == 5


def test_database_is_in_wal_mode(library: Library) -> None:
    with library.session() as session:
        assert session.scalar(text("PRAGMA journal_mode")) == "wal"


def test_a_file_that_is_not_a_library_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "library.db").write_text("not a database at all, but long enough to have a header" * 10)
    with pytest.raises(StorageError) as error:
        Library(tmp_path)
    assert str(error.value) == f"cannot open the library database {tmp_path / 'library.db'}: file is not a database"


def test_collections_belong_to_their_user_and_a_shared_one_is_read_only(library: Library) -> None:
    bob_doc = library.store("papers", make_document("/b.txt", ["Bob's zebra runs fast."]), user="bob").document_id
    library.store("papers", make_document("/a.txt", ["Alice's lion sleeps."]), user="alice")  # same name, her own
    assert library.collection_names("alice") == ["papers"] and library.collection_names("carol") == []
    assert [d.source for d in library.documents("papers", "alice")] == ["/a.txt"]
    assert library.search_sentences(["papers"], "zebra", 5, user="alice") == []
    assert library.document(bob_doc, user="alice") is None and library.document(bob_doc, user="bob") is not None
    with pytest.raises(StorageError, match="no document with id"):
        library.remove_document(bob_doc, user="alice")
    with pytest.raises(StorageError, match="no collection named 'papers' \\(collections: none yet\\)"):
        library.documents("papers", "carol")  # nothing about bob's collection shows

    library.set_shared("papers", True, user="bob")
    assert library.collection_names("carol") == ["papers"]  # carol reads bob's shared collection
    assert [h.text for h in library.search_sentences(["papers"], "zebra", 5, user="carol")] == [
        "Bob's zebra runs fast."
    ]
    assert [d.source for d in library.documents("papers", "alice")] == ["/a.txt"]  # her own comes first
    infos = {(c.name, c.owner, c.shared) for c in library.collections("carol")}
    assert infos == {("papers", "bob", True)}
    with pytest.raises(StorageError, match="shared with you by its owner: only they can change it"):
        library.remove_collection("papers", user="carol")
    with pytest.raises(StorageError, match="no document with id"):
        library.remove_document(bob_doc, user="carol")
    assert library.remove_collection("papers", user="alice") == 1 and library.collection_names("bob") == ["papers"]


def test_a_version_3_library_gives_its_collections_to_the_command_line_user(tmp_path: Path) -> None:
    library = Library(tmp_path)
    library.store("python-stdlib", make_document("/s.txt", ["The zip builtin pairs items."]))
    library.store("notes", make_document("/n.txt", ["The zebra runs fast."]))
    database = sqlite3.connect(library.db_path, isolation_level=None)  # as schema version 3 wrote it: no owners
    for statement in [
        "ALTER TABLE metrics DROP COLUMN user",
        "ALTER TABLE citations DROP COLUMN speaker",
        "CREATE TABLE c3 (id INTEGER PRIMARY KEY, name VARCHAR(200) UNIQUE, created_at DATETIME NOT NULL)",
        "INSERT INTO c3 SELECT id, name, created_at FROM collections",
        "DROP TABLE collections",
        "ALTER TABLE c3 RENAME TO collections",
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
    ]:
        database.execute(statement)
    database.close()
    upgraded = Library(tmp_path)
    with upgraded.session() as session:
        assert session.get(Meta, "schema_version").value == str(SCHEMA_VERSION)
    assert {(c.name, c.owner, c.shared) for c in upgraded.collections("")} == {
        ("notes", "", False),
        ("python-stdlib", "", True),
    }
    assert upgraded.collection_names("alice") == ["python-stdlib"]  # the embedded sample stays everyone's
    assert len(upgraded.documents("notes")) == 1  # the documents kept their collections


def test_concurrent_ingests_of_the_same_files_both_end_cleanly(tmp_path: Path, home: Path) -> None:
    import subprocess
    import sys

    for i in range(30):
        (tmp_path / f"note-{i}.txt").write_text(f"Note {i}.\n\n" + "The whale surfaced near the ship. " * 50)
    command = [sys.executable, "-m", "app.cli", "--home", str(home), "ingest", str(tmp_path), "--collection", "c"]
    for _ in range(2):  # two rounds: a fresh library, then one holding the files
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        results = [(*run.communicate(), run.returncode) for run in runs]
        for _, err, code in results:
            assert code == 0 and "Traceback" not in err, err
        statuses = [line.split(": ")[1].split()[0] for out, _, _ in results for line in out.splitlines() if "]" in line]
        assert set(statuses) <= {"ingested", "unchanged", "duplicate"} and len(statuses) == 90, statuses
    assert len(Library(home).documents("c")) == 30

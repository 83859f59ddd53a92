"""The library store: one transaction per document, no-op re-ingest, replacement, removal, BM25 search, the
sentences the readers cite, schema version and upgrades."""

from __future__ import annotations

import hashlib
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

"""Parsing text, markdown, HTML and JSONL in the calling process (``parse_item``, ``parse_text``)."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from samples import text_pdf

from ingest import pipeline
from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_item, parse_text
from ingest.sources import InputItem

Check = Callable[[ParsedDocument], None]


def _one(source: str, kind: str, data: bytes) -> ParsedDocument | IngestError:
    [result] = parse_item(InputItem(source, kind, data=data))
    return result


def test_plain_text(check_document: Check) -> None:
    data = "  My Notes  \n\nThe \ufb01rst idea is simple. The second, e.g. this one, is not.\n".encode()
    doc = _one("notes.txt", "txt", data)
    assert isinstance(doc, ParsedDocument)
    check_document(doc)
    assert doc.title == "My Notes" and doc.kind == "txt" and not doc.warnings and doc.pages == []
    assert doc.content_hash == hashlib.sha256(data).hexdigest()
    assert [doc.text[s.start : s.end] for s in doc.sentences] == [
        "My Notes",
        "The first idea is simple.",
        "The second, e.g. this one, is not.",
    ]


def test_a_text_opening_with_a_paragraph_is_titled_by_its_file_name() -> None:
    """A first line that is a sentence or a paragraph (40 words) does not name the document: its file name does."""
    paragraph = " ".join(["The committee reviewed the budget for the new library building in detail"] * 3) + "."
    for first in (paragraph, "We met on Monday to decide."):
        doc = _one("minutes_2024-03.txt", "txt", f"{first}\n\nThe second paragraph.".encode())
        assert isinstance(doc, ParsedDocument) and doc.title == "minutes_2024-03", doc.title


def test_a_transcript_is_titled_by_its_file_name_not_its_first_turn() -> None:
    """A text that opens with a transcript's turns ("Project Manager: So", a QMSum meeting a user uploaded) is named
    by its file; a title line above the turns, or a "Chapter 1: The Sea" line above a paragraph, names it."""
    turns = "Project Manager: So\nMarketing: Okay .\nIndustrial Designer: We need a budget of twelve euros ."
    doc = _one("IS1006b.txt", "txt", turns.encode())
    assert isinstance(doc, ParsedDocument) and doc.title == "IS1006b", doc.title
    for title, text in [
        ("Budget meeting", f"Budget meeting\n\n{turns}"),
        ("Chapter 1: The Sea", "Chapter 1: The Sea\n\nThe boat left at dawn. The sea was calm."),
    ]:
        doc = _one("notes.txt", "txt", text.encode())
        assert isinstance(doc, ParsedDocument) and doc.title == title, doc.title


def test_encodings(check_document: Check) -> None:
    text = "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9."
    for data in (text.encode("utf-8"), text.encode("utf-8-sig"), text.encode("utf-16")):
        doc = _one("a.txt", "txt", data)
        assert isinstance(doc, ParsedDocument) and doc.text == text and not doc.warnings
    doc = _one("old.txt", "txt", "Caf\u00e9 \u2014 na\u00efve.".encode("cp1252"))
    assert isinstance(doc, ParsedDocument)
    check_document(doc)
    assert doc.text == "Caf\u00e9 \u2014 na\u00efve." and doc.warnings == ["not UTF-8; decoded as cp1252"]


def test_binary_and_blank_content_rejected() -> None:
    error = _one("image.txt", "txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    assert isinstance(error, IngestError) and error.reason == "binary content, not text"
    error = _one("blank.md", "md", b" \n\n \t\n")
    assert isinstance(error, IngestError) and "no text" in error.reason
    [error] = parse_item(InputItem("empty.txt", "txt", data=b""))
    assert isinstance(error, IngestError) and error.reason == "empty file"
    letters = bytes(
        random.Random(0).choice(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5000)
    )
    error = _one("random.txt", "txt", letters)  # indexing 3 MB of this took many minutes and found nothing
    assert isinstance(error, IngestError) and error.reason.startswith("not text in words: 100% of it is runs")
    words = _one("words.txt", "txt", b"Some words. " * 500)
    assert isinstance(words, ParsedDocument)


def test_markdown_headings(check_document: Check) -> None:
    doc = _one("guide.md", "md", b"# User Guide\n\nIntro text.\n\n## Install\n\nRun pip. Done.\n")
    assert isinstance(doc, ParsedDocument)
    check_document(doc)
    assert doc.title == "User Guide"
    assert [s.title for s in doc.sections] == ["User Guide", "Install"]


def test_html(check_document: Check) -> None:
    html = (
        b"<html><head><title>The Page</title><style>p {color: red}</style></head><body>"
        b"<script>var x = 'hidden';</script><h1>Big Heading</h1><p>First para&nbsp;here. Second one.</p>"
        b"<h2>Details</h2><ul><li>Item one.</li><li>Item two.</li></ul></body></html>"
    )
    doc = _one("page.html", "html", html)
    assert isinstance(doc, ParsedDocument)
    check_document(doc)
    assert doc.title == "The Page"
    assert "hidden" not in doc.text and "color" not in doc.text
    assert [s.title for s in doc.sections] == ["Big Heading", "Details"]
    assert [doc.text[s.start : s.end] for s in doc.sentences] == [
        "First para here.",
        "Second one.",
        "Item one.",
        "Item two.",
    ]


def test_jsonl_records_and_bad_lines(check_document: Check) -> None:
    lines = [
        json.dumps({"id": "a", "text": "Alpha text. More.", "title": "Alpha"}),
        "{not json",
        json.dumps({"id": 7, "text": "Seven here."}),
        json.dumps({"text": "no id"}),
        json.dumps({"id": "a", "text": "duplicate"}),
        "",
        json.dumps(["a list"]),
    ]
    results = parse_item(InputItem("data.jsonl", "jsonl", data="\n".join(lines).encode()))
    docs = [r for r in results if isinstance(r, ParsedDocument)]
    errors = {r.source: r.reason for r in results if isinstance(r, IngestError)}
    assert [(d.source, d.title) for d in docs] == [
        ("data.jsonl#a", "Alpha"),
        ("data.jsonl#7", "data 7"),
    ]  # a sentence is no title
    for doc in docs:
        check_document(doc)
    assert docs[0].content_hash == hashlib.sha256(lines[0].encode()).hexdigest()
    assert set(errors) == {"data.jsonl#line 2", "data.jsonl#line 4", "data.jsonl#line 5", "data.jsonl#line 7"}
    assert errors["data.jsonl#line 2"].startswith("invalid JSON")
    assert "duplicate" in errors["data.jsonl#line 5"]


def test_parse_text_from_memory(check_document: Check) -> None:
    doc = parse_text("pydoc:json", "json", "pydoc", "JSON encoder.\n\nIt dumps  objects. It loads them.", "h")
    check_document(doc)
    assert doc.title == "json" and doc.kind == "pydoc" and doc.content_hash == "h"
    assert [doc.text[s.start : s.end] for s in doc.sentences] == [
        "JSON encoder.",
        "It dumps objects.",
        "It loads them.",
    ]


def test_file_on_disk_and_unreadable_path(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("Hello there. General Kenobi.")
    [doc] = parse_item(InputItem(str(path), "txt", path=path))
    assert isinstance(doc, ParsedDocument) and len(doc.sentences) == 2
    [error] = parse_item(InputItem(str(tmp_path / "gone.txt"), "txt", path=tmp_path / "gone.txt"))
    assert isinstance(error, IngestError) and error.reason.startswith("cannot read file")


def test_five_byte_pdf_is_a_clear_error() -> None:
    error = _one("bad1.pdf", "pdf", b"oops\n")
    assert isinstance(error, IngestError) and error.reason.startswith("not a PDF")


def test_a_million_token_text_is_segmented_whole(check_document: Check) -> None:
    """About a million tokens of plain text parse into every section and sentence (speed: ``bench-ingest``)."""
    paragraph = (
        "The committee met on Tuesday, e.g. to discuss the budget of 3.5 million dollars. Dr. Smith "
        "presented the figures in Fig. 2 and the members asked many questions about them. "
    ) * 4
    text = "\n\n".join(f"Section {i}\n\n{paragraph}" for i in range(5400))
    doc = parse_text("big.txt", "", "txt", text, "h")
    check_document(doc)
    assert len(doc.sentences) == 5400 * 9  # each "Section i" line and the eight sentences of its paragraph


def test_a_cp1252_byte_late_in_a_long_file_sets_the_encoding(tmp_path: Path) -> None:
    """The encoding is settled over all the bytes, not the first chunk: a 2 MiB UTF-8-looking file whose only
    non-ASCII byte is near the end decodes as cp1252, and a UTF-8 character cut by a chunk boundary survives."""
    old = tmp_path / "old.txt"
    old.write_bytes(b"Plain words here. " * 120_000 + "Caf\u00e9 \u2014 fin.".encode("cp1252"))
    [doc] = parse_item(InputItem(str(old), "txt", path=old))
    assert isinstance(doc, ParsedDocument) and doc.warnings == ["not UTF-8; decoded as cp1252"]
    assert doc.text.endswith("Caf\u00e9 \u2014 fin.")
    new = tmp_path / "new.txt"
    filler = (b"words " * (1 << 18))[: (1 << 20) - 1]
    new.write_bytes(filler + " \u00e9t\u00e9.".encode())  # the 2-byte 'é' straddles the 1 MiB chunk
    [doc] = parse_item(InputItem(str(new), "txt", path=new))
    assert isinstance(doc, ParsedDocument) and not doc.warnings and doc.text.endswith(" \u00e9t\u00e9.")


def test_a_text_file_over_the_part_size_is_ingested_in_parts(
    tmp_path: Path, check_document: Check, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "PART_CHARS", 1000)
    paragraphs = [f"Paragraph {i} opens here. It closes there." for i in range(80)]
    path = tmp_path / "long.md"
    path.write_text("# Long Report\n\n" + "\n\n".join(paragraphs) + "\n")
    parts = parse_item(InputItem(str(path), "md", path=path))
    assert len(parts) == 4 and all(isinstance(p, ParsedDocument) for p in parts)
    for number, part in enumerate(parts, start=1):
        assert isinstance(part, ParsedDocument)
        check_document(part)
        assert part.source == f"{path}#part {number}" and part.title == f"Long Report (part {number})"
        assert part.content_hash == hashlib.sha256(part.text.encode()).hexdigest()
    sentences = [p.text[s.start : s.end] for p in parts if isinstance(p, ParsedDocument) for s in p.sentences]
    assert sentences == [*(s for p in paragraphs for s in p.replace(". ", ".\n").split("\n"))]


def test_jsonl_on_disk_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("\r\n".join(json.dumps({"id": i, "text": f"Record {i} " + "word " * 30_000}) for i in range(40)))
    docs = parse_item(InputItem(str(path), "jsonl", path=path))
    assert [d.source for d in docs] == [f"{path}#{i}" for i in range(40)]
    assert all(isinstance(d, ParsedDocument) and d.text.startswith(f"Record {i} word") for i, d in enumerate(docs))


def test_a_page_of_glyph_names_is_flagged_and_not_indexed(tmp_path: Path) -> None:
    """pypdf extracts a font without a character map as glyph names ("/g00/g01"), pdfium as control codes: neither
    is text. The page is left out with a warning naming it; a file with nothing else is an error that says why."""
    readable: list[str | bytes] = ["The quarterly report states total net sales of 280,522 thousand dollars."] * 12
    glyphs: list[str | bytes] = [b"<0102030405060720080900>"] * 30
    names = b"1 " + b" ".join(b"/g%02d" % i for i in range(9))
    path = tmp_path / "report.pdf"
    path.write_bytes(text_pdf(None, [readable, glyphs], differences=names))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument) and len(doc.pages) == 2
    assert "total net sales" in doc.text and "/g0" not in doc.text
    second = doc.pages[1]
    assert doc.text[second.start : second.end] == ""
    assert "page 2: the text layer is glyph names, not words: not indexed" in doc.warnings
    assert not any("scanned" in warning for warning in doc.warnings)
    path.write_bytes(text_pdf(None, [glyphs], differences=names))
    [error] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(error, IngestError)
    assert error.reason == "no readable text on its only page: the text layer is glyph names, not words"


def test_a_sentence_that_runs_on_to_the_next_page_stays_whole(tmp_path: Path) -> None:
    """Pages are joined by a paragraph break, unless a page stops mid-sentence and the next goes on in lower case:
    then the sentence is one (cited whole, on the page where it starts), a word hyphenated across the break rejoined."""
    pages: list[list[str | bytes]] = [
        ["Tidal barrages hold water behind a dam at high tide and release it through the"],
        ["turbines when the tide falls. Stream generators work like under-"],
        ["water wind turbines in fast currents. This page ends on a full stop."],
        ["and this page starts in lower case but follows a finished sentence."],
    ]
    path = tmp_path / "tides.pdf"
    path.write_bytes(text_pdf(None, pages))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument)
    sentences = [(doc.text[s.start : s.end], s.page) for s in doc.sentences]
    assert sentences == [
        (
            "Tidal barrages hold water behind a dam at high tide and release it through the turbines when the tide "
            "falls.",
            1,
        ),
        ("Stream generators work like underwater wind turbines in fast currents.", 2),
        ("This page ends on a full stop.", 3),
        ("and this page starts in lower case but follows a finished sentence.", 4),
    ]
    assert [doc.text[p.start : p.end][:11] for p in doc.pages] == [
        "Tidal barra",
        "turbines wh",
        "water wind ",
        "and this pa",
    ]


def _pdf_title(path: Path, metadata: str | None, lines: list[str | bytes]) -> str:
    """The title ingestion gives a one-page PDF of ``lines`` with this metadata title."""
    path.write_bytes(text_pdf(metadata, [lines]))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument)
    return doc.title


def test_titles_on_two_lines_template_names_licence_lines_and_entities(tmp_path: Path) -> None:
    first_page: list[str | bytes] = [
        "Multi-LexSum: Real-World Summaries of Civil",
        "Rights Lawsuits at Multiple Granularities",
        "Zejiang Shen, Kyle Lo, Lauren Yu",
        "Abstract",
        "We summarize civil rights lawsuits at three granularities.",
    ]
    path = tmp_path / "paper.pdf"
    assert (
        _pdf_title(path, "Proceedings Template - WORD", first_page)
        == "Multi-LexSum: Real-World Summaries of Civil Rights Lawsuits at Multiple Granularities"
    )
    author = ["CiteSee: Augmenting Citations", "Joseph Chee Chang", "Allen Institute"]
    assert _pdf_title(path, None, author) == "CiteSee: Augmenting Citations"  # a name is an author
    licence = "Content from this work may be used under the terms of the Creative Commons Attribution 3.0 licence"
    lines: list[str | bytes] = [licence, "Low-Power Strain Sensors", "We build a sensor."]
    assert _pdf_title(path, None, lines) == "Low-Power Strain Sensors"  # a licence line is no title
    entities = _pdf_title(path, "COVID&#x02010;19 vaccination", ["Some text here."])
    assert entities == "COVID\u201019 vaccination"  # entities are unescaped
    table: list[str | bytes] = [
        "Field Task Dataset SOTA BERT-Base SCIBERT",
        "Frozen Finetune Frozen Finetune",
        "BC5CDR (Li et al., 2016) 88.857 85.08 86.72 88.73 90.01",
        "JNLPBA (Collier and Kim, 2004) 78.58 74.05 76.09 75.77 77.28",
        "NCBI-disease (Dogan et al., 2014) 89.36 84.06 86.88 86.39 88.57",
        "Table 1: Test performances of all BERT variants on all tasks and datasets.",
    ]
    assert _pdf_title(tmp_path / "1903.10676.pdf", None, table) == "1903.10676"  # a table's header is no title
    authors = ["SciBERT: A Pretrained Language Model", "Iz Beltagy 12, Kyle Lo 34", "Seattle, WA 98103", "Abstract"]
    assert _pdf_title(path, None, authors) == "SciBERT: A Pretrained Language Model"


def test_a_filing_is_titled_by_its_registrant_and_a_generic_heading_is_no_title(tmp_path: Path) -> None:
    cover: list[str | bytes] = [
        "UNITED STATES",
        "SECURITIES AND EXCHANGE COMMISSION",
        "Washington, D.C. 20549",
        "FORM 10-K",
        "Acme Widgets, Inc.",
        b"(\\(Exact name of registrant as specified in its charter\\))",
        "Total net sales were 280,522 thousand dollars in 2019.",
    ]
    path = tmp_path / "acme-2019.pdf"
    path.write_bytes(text_pdf("Table of Contents", [cover]))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument) and doc.title == "Acme Widgets, Inc. Form 10-K"
    contents: list[str | bytes] = ["Table of Contents", "Quarterly results of the widget business"] * 3
    path = tmp_path / "widgets.pdf"
    path.write_bytes(text_pdf("Table of Contents", [contents]))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument) and doc.title == "Quarterly results of the widget business"


def test_a_sentence_across_a_page_break_stays_whole() -> None:
    """A page that stops on a word no sentence ends on, or on a comma, goes on in the next whatever its case ("… to
    replenish the" + "DRF." was cut in two), unless the next page starts with a heading or a caption."""
    assert pipeline._page_joint("passed to replenish the", "DRF. The fund was used.")[1] == " "
    assert pipeline._page_joint("On May 18, 2017,", "President Trump announced it.")[1] == " "
    assert pipeline._page_joint("It ends here.", "Next page")[1] == "\n\n"
    assert pipeline._page_joint("as shown in the results of", "2 Related Work\nText")[1] == "\n\n"
    assert pipeline._page_joint("the figures are as follows,", "Table 3: Results")[1] == "\n\n"

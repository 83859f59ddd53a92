"""Sentence-XML papers (ScisummNet format): exact sentences, sections, abstract, and clear errors."""

from __future__ import annotations

from pathlib import Path

from samples import PAPER

from ingest.document import IngestError
from ingest.pipeline import parse_item
from ingest.sources import InputItem


def parse(tmp_path: Path, data: bytes) -> object:
    path = tmp_path / "paper.xml"
    path.write_bytes(data)
    (result,) = parse_item(InputItem(str(path), "xml", path=path))
    return result


def test_sentences_sections_and_abstract_are_kept_exactly(tmp_path: Path) -> None:
    document = parse(tmp_path, PAPER)
    assert document.title == "A Tagger & Its Evaluation" and document.kind == "xml"
    texts = [document.text[s.start : s.end] for s in document.sentences]
    assert texts[2:4] == ["We present a fast statistical tagger for many languages.", "Taggers assign tags to words."]
    assert texts[-1] == "Unknown words use suffixes."
    assert [(s.title, s.kind) for s in document.sections] == [
        ("Abstract", "abstract"),
        ("1 Introduction", "body"),
        ("2 Method", "body"),
    ]


def test_not_a_paper_and_damaged_xml_are_named(tmp_path: Path) -> None:
    wrong = parse(tmp_path, b"<html><body>hi</body></html>")
    assert isinstance(wrong, IngestError) and "root element is <html>, expected <PAPER>" in str(wrong)
    damaged = parse(tmp_path, PAPER[:200])
    assert isinstance(damaged, IngestError) and "paper.xml: damaged XML" in str(damaged)
    empty = parse(tmp_path, b"<PAPER><S>Only a title</S></PAPER>")
    assert isinstance(empty, IngestError) and "no sentences" in str(empty)

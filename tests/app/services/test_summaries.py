"""A document's body for summaries: its library sentences, without the abstract (tagged or copied) and headings."""

from __future__ import annotations

from pathlib import Path

from samples import PAPER

from app.services.summaries import abstract_copy, body_of
from ingest.pipeline import parse_item
from ingest.sources import InputItem


def test_the_body_is_library_sentences_without_the_abstract(tmp_path: Path) -> None:
    path = tmp_path / "paper.xml"
    path.write_bytes(PAPER)
    (document,) = parse_item(InputItem(str(path), "xml", path=path))
    body, abstract = body_of(document)
    assert abstract == 0 and body.document.text.startswith("We present a fast") and "Abstract" not in body.document.text
    cut = abstract_copy(document, "We present a fast statistical tagger for many languages.")
    assert cut == {1, 2}  # the tagged abstract and its untagged copy at the start of the introduction
    body, _ = body_of(document, cut)
    assert body.document.text == "Taggers assign tags to words.\n\nTrigrams are smoothed.\nUnknown words use suffixes."
    assert body.sentences == [3, 4, 5]
    for row, index in enumerate(body.sentences):  # each body sentence is the document's sentence, moved
        sentence = document.sentences[index]
        assert body.document.sentence_text(row) == document.text[sentence.start : sentence.end]


def test_figure_and_table_captions_are_no_summary_sentences() -> None:
    from ingest.pipeline import parse_text

    text = (
        "Results\n\nSCIBERT outperforms BERT-Base on computer science tasks.\n\n"
        "Table 1: Test performances of all BERT variants on all tasks and datasets.\n\n"
        "Figure 2. Distribution of papers by field of study.\n\n"
        "Figure 3: The toolkit. (A) Recipes process a PDF. (B) They compose models. (D, E) Layers.\n\n"
        "As Table 1 shows, finetuning helps on every dataset."
    )
    document = parse_text("scibert.txt", "SciBERT", "txt", text, "")
    body, _ = body_of(document)
    assert [body.document.sentence_text(row) for row in range(len(body.sentences))] == [
        "SCIBERT outperforms BERT-Base on computer science tasks.",
        "As Table 1 shows, finetuning helps on every dataset.",
    ], body.document.text


def test_a_calls_script_safe_harbor_and_turn_labels_are_no_summary_sentences() -> None:
    """The walk's summary of two earnings calls quoted "(Operator Instructions) At this time, I would like to turn the
    conference over to …", the safe-harbor notice's last piece and "Bob Butchofsky Speaking."; a news story's one
    conference call stays."""
    from ingest.pipeline import parse_text

    notice = "Forward-looking statements include " + "plans, objectives and guidance, " * 40 + "and other risks."
    call = (
        "Welcome to the QLT fourth quarter 2010 conference call. All participants are in a listen-only mode. "
        "(Operator Instructions) At this time, I would like to turn the conference over to Karen Peterson.\n"
        f"Karen Peterson Speaking.\n{notice}\nBob Butchofsky Speaking.\n"
        "We generated almost $16 million in adjusted EBITDA last year. We halted the plug program."
    )
    document = parse_text("qlt_call.txt", "", "txt", call, "")
    assert len(document.text[document.sentences[4].start : document.sentences[4].end]) < len(notice)  # in pieces
    body, _ = body_of(document)
    assert [body.document.sentence_text(row) for row in range(len(body.sentences))] == [
        "We generated almost $16 million in adjusted EBITDA last year.",
        "We halted the plug program.",
    ], body.document.text
    story = "The FEMA director held a conference call with state officials. Power returned on Monday. Roads opened."
    news = parse_text("storm.txt", "", "txt", story, "")
    assert len(body_of(news)[0].sentences) == 3

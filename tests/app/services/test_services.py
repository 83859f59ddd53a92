"""The services behind the app's tabs, without a browser: cited pages and evidence, sessions per user, summaries,
metrics, settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import ImageChops
from samples import text_pdf
from sqlalchemy import select

from app.services import Services, UserError
from app.services.library import cited_as, quote_span
from storage.models import SummaryRow

TIDES = [
    [
        "Tidal power converts the energy of the tides into electricity.",
        "The tides are predictable, which makes tidal power a reliable source of energy.",
    ],
    [
        "A tidal barrage holds water behind a dam at high tide and releases it through turbines.",
        "Tidal stream generators work like underwater wind turbines in fast currents.",
    ],
]
WORDS = ("north", "river", "copper", "harbour", "silver", "granite", "meadow")
LIGHTHOUSES = (
    "Lighthouses guide ships along dangerous coasts.\n\nTheir lamps rotate to make a recognisable pattern of "
    "flashes. Keepers once trimmed the wicks every night.\n"
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Services, dict[str, int]]:
    """A library with a two-page PDF and a text file uploaded into 'energy'; the documents' ids by kind."""
    folder = tmp_path_factory.mktemp("uploads")
    (folder / "tides.pdf").write_bytes(text_pdf("Notes on Tidal Power", TIDES))
    (folder / "lighthouses.txt").write_text(LIGHTHOUSES)
    services = Services(tmp_path_factory.mktemp("library"))
    events = list(services.ingest.ingest_uploads([folder / "tides.pdf", folder / "lighthouses.txt"], "energy"))
    assert [e.status for e in events] == ["ingested", "ingested"], events
    return services, {services.library.document(e.document_id).kind: e.document_id for e in events}


def test_a_cited_pdf_page_renders_with_its_sentence_in_context(library: tuple[Services, dict[str, int]]) -> None:
    services, ids = library
    answer = services.ask.ask(["energy"], "What does a barrage hold behind a dam?", top_k=3)
    top = answer.citations[0]
    assert top.doc == ids["pdf"] and top.page == 2 and "barrage" in top.text, answer.citations
    evidence = services.library.evidence(top.doc, top.start, top.end, top.page)
    assert evidence.quote == top.text and evidence.page == 2
    assert "Tidal stream generators" in evidence.after and "predictable" not in evidence.before  # page 2 only
    image = services.library.render_page(top.doc, 2)
    assert image.width > 500 and image.height > 600
    assert image.convert("L").getextrema()[0] < 100, "the rendered page has no dark (text) pixels"
    highlighted = services.library.render_page(top.doc, 2, highlight=top.text)
    changed = ImageChops.difference(image.convert("RGB"), highlighted).getbbox()  # the cited sentence's box
    assert changed is not None, "nothing is drawn on the page"
    left, upper, right, lower = changed
    assert right - left > 100 and 5 < lower - upper < image.height / 3  # a line or two, not the whole page
    box = list(highlighted.crop(changed).get_flattened_data())
    yellow = sum(r > 200 and g > 150 and b < 180 for r, g, b in box)
    assert yellow > 0.3 * len(box), "the box is yellow (its text stays readable under it)"
    with pytest.raises(UserError, match="has pages 1-2, not 3"):
        services.library.render_page(top.doc, 3)


def test_the_highlight_spans_a_hyphenated_line_break_and_a_sentence_that_runs_on() -> None:
    # pdfium's text layer marks a line-break hyphen with U+FFFE; the library's text joined the word ("papers")
    page = "S2ORC dataset\r\nThe resulting corpus consists of 81.1M pa\ufffepers. Our publisher-provided abstract"
    first, last = quote_span(page, "The resulting corpus consists of 81.1M papers.")
    assert page[first : last + 1] == "The resulting corpus consists of 81.1M pa\ufffepers."
    # a sentence that goes on on the next page: the part this page holds, at the occurrence that goes furthest
    page = "Related work. Perhaps the most similar work is X. Perhaps the most similar work is BookSum; however"
    first, last = quote_span(page, "Perhaps the most similar work is BookSum; however its summaries consider books.")
    assert page[first : last + 1] == "Perhaps the most similar work is BookSum; however"
    assert quote_span(page, "A sentence this page does not hold at all.") is None


def test_text_documents_have_evidence_but_no_page(library: tuple[Services, dict[str, int]]) -> None:
    services, ids = library
    document = services.library.document(ids["txt"])
    start = document.text.index("Their lamps")
    end = document.text.index("flashes.") + len("flashes.")
    evidence = services.library.evidence(ids["txt"], start, end)
    assert evidence.quote.startswith("Their lamps") and evidence.before.startswith("Lighthouses")
    assert evidence.after.strip() == "Keepers once trimmed the wicks every night."
    assert not evidence.cut_before and not evidence.cut_after
    short = services.library.evidence(ids["txt"], start, end, context=20)
    assert short.cut_before and short.cut_after and not short.before.startswith("ouses")
    with pytest.raises(UserError, match="is not a PDF"):
        services.library.render_page(ids["txt"], 1)


def test_a_pdf_whose_file_is_gone_or_changed_is_a_clear_error(tmp_path: Path) -> None:
    services = Services(tmp_path / "library")
    pdf = tmp_path / "tides.pdf"
    pdf.write_bytes(text_pdf("Notes on Tidal Power", TIDES))
    (event,) = services.ingest.ingest([pdf], "energy")
    assert services.library.render_page(event.document_id, 1).width > 0
    pdf.write_bytes(text_pdf("Notes on Tidal Power", TIDES[::-1]))
    with pytest.raises(UserError, match="changed since it was ingested"):
        services.library.render_page(event.document_id, 1)
    pdf.unlink()
    with pytest.raises(UserError, match=r"the file of 'Notes on Tidal Power' is gone \(.*tides\.pdf\)"):
        services.library.render_page(event.document_id, 1)
    with pytest.raises(UserError, match="no longer in the library"):
        services.library.render_page(event.document_id + 100, 1)


def test_sessions_belong_to_their_user_and_survive_a_restart(library: tuple[Services, dict[str, int]]) -> None:
    services, _ = library
    services.library.share("energy", True)  # the CLI user's collection, readable by alice and bob
    alice = services.sessions.create("alice's notes", "alice")
    bob = services.sessions.create("bob's notes", "bob")
    services.ask.ask(["energy"], "What does a barrage hold behind a dam?", session_id=alice.id, user="alice")
    with pytest.raises(UserError, match=f"no session with id {alice.id}"):
        services.ask.ask(["energy"], "Who keeps the lighthouse?", session_id=alice.id, user="bob")
    with pytest.raises(UserError, match=f"no session with id {alice.id}"):
        services.sessions.export(alice.id, "md", "bob")
    assert [s.name for s in services.sessions.list("bob")] == ["bob's notes"]
    assert all(s.id not in (alice.id, bob.id) for s in services.sessions.list(""))
    restarted = Services(services.home)
    (session,) = restarted.sessions.list("alice")
    assert (session.id, session.questions) == (alice.id, 1)
    (turn,) = restarted.sessions.history(alice.id, "alice")
    assert turn["question"] == "What does a barrage hold behind a dam?" and turn["citations"][0]["page"] == 2


ABSTRACT_PAPER = """A Study of Tidal Barrages

Abstract

Tidal barrages store water at high tide and release it through turbines. We measure their output over a year.

1 Introduction

Tidal power is predictable. Barrages hold water behind a dam at high tide. The water is released through turbines
when the tide falls. Output follows the lunar cycle closely.

2 Results

The barrage produced power for ten hours a day. Maintenance stopped it for two weeks in winter.
"""


def test_summaries_cite_their_sentences_and_score_against_the_abstract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INDEXPOOL_CHECKPOINT", str(tmp_path / "missing.pt"))  # the labelled LEAD fallback
    services = Services(tmp_path / "library")
    (tmp_path / "barrages.txt").write_text(ABSTRACT_PAPER)
    (tmp_path / "tides.pdf").write_bytes(text_pdf("Notes on Tidal Power", TIDES))
    ids = {Path(e.source).suffix: e.document_id for e in services.ingest.ingest([tmp_path], "energy")}
    paper = services.summaries.summarize("energy", [ids[".txt"]], 12)  # one document: scored against its abstract
    assert paper.scope == "document" and paper.summarizer == "lead"
    assert paper.label == "baseline: lead (model checkpoint not installed)"
    (barrages,) = paper.documents
    text = services.library.document(barrages.document_id).text
    assert barrages.sentences[0]["text"] == "Tidal power is predictable."  # the body's lead, not the abstract
    assert all(text[s["start"] : s["end"]] == s["text"] for s in barrages.sentences)
    words = [len(s["text"].split()) for s in barrages.sentences]  # whole sentences until the budget is reached
    assert sum(words) >= 12 > sum(words) - words[-1]
    assert barrages.rouge is not None and 0 < barrages.rouge["rouge1"] < 1

    seen: list[tuple[int, int, str]] = []  # the collection: one summary within one budget
    summary = services.summaries.summarize("energy", [], 12, progress=lambda *step: seen.append(step))
    assert summary.scope == "collection" and [step[:2] for step in seen] == [(0, 2), (1, 2)]
    by_id = {d.document_id: d for d in summary.documents}
    with_abstract, notes = by_id[ids[".txt"]], by_id[ids[".pdf"]]
    assert [s["text"] for s in notes.sentences] == [TIDES[0][0]]  # the larger document's best first
    assert [s["text"] for s in with_abstract.sentences] == ["Tidal power is predictable."]  # then the other's
    assert notes.sentences[0]["page"] == 1 and with_abstract.rouge is None and notes.rouge is None
    one = services.summaries.summarize("energy", [ids[".pdf"]], 30, "lexrank")
    assert one.scope == "document" and one.label == "lexrank" and len(one.documents) == 1
    with pytest.raises(UserError, match="no ingested document 999"):
        services.summaries.summarize("energy", [999], 30)
    with pytest.raises(UserError, match="word budget must be between 1 and 2000"):
        services.summaries.summarize("energy", [], 0)
    metrics = [m for m in services.metrics.records() if m["kind"] == "summarize"]
    assert [m["data"]["documents"] for m in metrics] == [1, 2, 1] and metrics[0]["data"]["rouge"]["rouge1"] > 0
    assert metrics[1]["data"]["rouge"] is None
    with services.ingest.library.session() as session:
        rows = session.scalars(select(SummaryRow).order_by(SummaryRow.id)).all()
        assert [(r.scope, r.id) for r in rows] == [
            ("document", paper.id),
            ("collection", summary.id),
            ("document", one.id),
        ]
        assert rows[0].scores == {str(ids[".txt"]): barrages.rouge} and rows[1].scores == {}


def test_settings_are_validated_stored_per_user_and_used_by_ask(library: tuple[Services, dict[str, int]]) -> None:
    services, _ = library
    assert (
        services.settings.settings("carol")["top_k"] == 5 and services.settings.settings("carol")["preset"] == "default"
    )
    saved = services.settings.save(
        {"top_k": 1, "preset": "technical", "alpha": 0.3, "beta": 0.55, "gamma": 0.15}, "carol"
    )
    assert saved["top_k"] == 1 and saved["ratio"] == 4
    assert Services(services.home).settings.settings("carol") == saved  # stored, not only in memory
    assert services.settings.settings("dave")["top_k"] == 5  # another user's settings are their own
    for values, message in [
        ({"alpha": 0.9}, r"α \+ β \+ γ must add up to 1, got 1\.60"),
        ({"alpha": -0.1, "beta": 0.9, "gamma": 0.2}, "α must be a number between 0 and 1, got -0.1"),
        ({"ratio": 3}, "the pooling ratio must be 1, 2, 4 or 8, got 3"),
        ({"top_k": 0}, "top-k must be a whole number between 1 and 100, got 0"),
        ({"reader": "gpt"}, "unknown reader 'gpt'"),
        ({"summarizer": "gpt"}, "unknown summarizer 'gpt'"),
        ({"preset": "legal"}, "unknown preset 'legal'"),
        ({"colour": "red"}, "unknown settings: colour"),
    ]:
        with pytest.raises(UserError, match=message):
            services.settings.save(values, "carol")
    assert services.settings.settings("carol") == saved
    assert services.settings.preset_weights("news") == (0.35, 0.25, 0.4)


def test_cache_memory_is_the_cache_answers_read(library: tuple[Services, dict[str, int]], tmp_path: Path) -> None:
    """The dashboard's bytes are those of the read cache a question uses, under the user's cache settings: a new
    setting re-pools tier 1 and changes them; under 10K tokens the keys are read uncompressed."""
    from model.network.checkpoint import load_model

    services, ids = library
    small = [services.library.document(i) for i in ids.values()]
    services.indexes.build([d.id for d in small])
    (row,) = [r for r in services.metrics.cache_memory() if r["collection"] == "energy"]
    assert row["cache"] == "default, 4:1 INT8" and row["tokens"] == sum(d.tokens for d in small) < 10_000
    model = load_model()
    cache = services.indexes.read_cache(model, [("energy", d.id, d.content_hash) for d in small])
    assert not cache.compressed and row["tier1"] == row["uncompressed"] == cache.tier1_bytes > 0

    lines = [
        f"Line {i}: the {WORDS[i % 7]} account moved {i * 37 % 1000} units to {WORDS[i % 5]}." for i in range(1200)
    ]
    (tmp_path / "ledger.txt").write_text("\n".join(lines))
    (event,) = services.ingest.ingest_uploads([tmp_path / "ledger.txt"], "ledger")
    big = services.library.document(event.document_id)
    assert big.tokens >= 10_000
    services.indexes.build([big.id])
    (row,) = [r for r in services.metrics.cache_memory() if r["collection"] == "ledger"]
    cache = services.indexes.read_cache(model, [("ledger", big.id, big.content_hash)])
    assert cache.compressed and row["tier1"] == cache.tier1_bytes < row["uncompressed"] / 10 < row["tier3"]
    try:
        services.settings.save({"int8": False, "ratio": 8})
        services.indexes.build([big.id])
        (changed,) = [r for r in services.metrics.cache_memory() if r["collection"] == "ledger"]
        assert changed["cache"] == "default, 8:1" and changed["tier1"] != row["tier1"]
        assert changed["tier3"] == row["tier3"]  # the keys and values stay: only tier 1 is pooled again
    finally:
        services.settings.save({"int8": True, "ratio": 4})


def test_the_settings_offer_the_indexpool_presets() -> None:
    from app.services.settings import PRESET_NAMES
    from model.network.indexpool.config import PRESETS

    assert PRESET_NAMES == list(PRESETS)


def test_the_command_line_starts_without_the_model() -> None:
    """``indexpool collections`` and the other library commands never import torch, scikit-learn or nltk."""
    import subprocess
    import sys

    code = "import sys, app.cli; print(sorted({'torch', 'sklearn', 'nltk'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_a_citation_names_the_file_beside_a_title_that_is_not_its_name() -> None:
    assert (
        cited_as("Acme Widgets, Inc. Form 10-K", "/data/acme-2019.pdf")
        == "Acme Widgets, Inc. Form 10-K (acme-2019.pdf)"
    )
    assert cited_as("acme-2019", "/data/acme-2019.pdf") == "acme-2019.pdf"
    assert cited_as("Minutes", "/data/meetings.zip!2019/march.txt") == "Minutes (march.txt)"
    assert cited_as("Record 7", "/data/notes.jsonl#7") == "Record 7 (notes.jsonl)"

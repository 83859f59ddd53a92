"""The readers over a library: every citation is a sentence of the library (a row of the sentences table, with its
page); the IndexPool reader's per-document indexes (reused, restored by a fresh process, joined into the index of a
selection, built once under concurrent asks, in the background as documents are ingested, pruned when documents
leave); the clear error without a checkpoint."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import fields, replace
from pathlib import Path

import pytest
import torch
from sqlalchemy import select

from app.services import Services, UserError
from app.services.ask import Answer
from ingest.document import Page, ParsedDocument
from ingest.pipeline import parse_text
from ingest.segment import segment
from model.inference.qa import CollectionIndex
from model.inference.sentences import WHOLE
from model.network.checkpoint import Model, load_model
from model.research.training.train import REPO, TrainConfig, Trainer
from storage.models import SentenceRow

PARAGRAPHS = {
    "whales.txt": [
        "Whales are marine mammals. They breathe air through a blowhole on the top of the head.",
        "The blue whale is the largest animal known to have lived. It feeds almost only on krill.",
    ],
    "trains.txt": [
        "The first public railway to use steam locomotives opened in 1825. It ran between Stockton and Darlington.",
        "High-speed trains run on dedicated tracks. Some reach more than 300 kilometres per hour.",
    ],
    "report.pdf": [  # two pages, one paragraph each
        "The budget committee met on Monday. It approved the new library building.",
        "Construction starts in the spring. The architect expects it to take two years.",
    ],
}


def parsed(source: str, paragraphs: list[str]) -> ParsedDocument:
    text = "\n\n".join(paragraphs)
    document = parse_text(source, "", "txt", text, hashlib.sha256(text.encode()).hexdigest())
    if not source.endswith(".pdf"):
        return document
    second = document.text.index(paragraphs[1])
    pages = [Page(1, 0, second), Page(2, second, len(document.text))]
    sentences = segment(document.text, page_starts=[p.start for p in pages]).sentences
    return replace(document, kind="pdf", pages=pages, sentences=sentences)


@pytest.fixture(scope="session")
def checkpoint(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint of the smoke training config (about 20 s on one CPU thread)."""
    out = tmp_path_factory.mktemp("checkpoint")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert Trainer(TrainConfig.from_json(REPO / "configs" / "train_smoke.json"), out, resume=False).run()
    finally:
        torch.set_num_threads(threads)
    return out / "indexpool.pt"


@pytest.fixture
def services(checkpoint: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Services:
    monkeypatch.setenv("INDEXPOOL_CHECKPOINT", str(checkpoint))
    services = Services(home)
    events = list(services.ingest.ingest_texts([parsed(s, p) for s, p in PARAGRAPHS.items()], "notes"))
    assert all(e.status == "ingested" for e in events)
    return services


def assert_library_sentences(services: Services, answer: Answer) -> None:
    """Every citation is a row of the sentences table: its document, span, text and page."""
    with services.ingest.library.session() as session:
        rows = {
            (r.document_id, r.start, r.end): r
            for r in session.scalars(
                select(SentenceRow).where(SentenceRow.document_id.in_({c.doc for c in answer.citations}))
            )
        }
    assert answer.citations
    for citation in answer.citations:
        row = rows[(citation.doc, citation.start, citation.end)]
        assert (row.text, row.page) == (citation.text, citation.page)
        document = services.library.document(citation.doc)
        assert document.text[citation.start : citation.end] == citation.text
        assert citation.title == document.title and citation.source == document.source


@pytest.mark.parametrize("reader", ["bm25", "indexpool"])
def test_every_citation_is_a_library_sentence_with_its_page(services: Services, reader: str) -> None:
    for question in ("How do whales breathe?", "When does construction start?", "budget committee library"):
        answer = services.ask.ask(["notes"], question, top_k=6, reader=reader)
        assert answer.reader == reader
        assert_library_sentences(services, answer)
        assert answer.answer.startswith(f"{answer.citations[0].text} [1]")
    pages = {c.page for c in services.ask.ask(["notes"], "budget construction", top_k=8, reader=reader).citations}
    assert {1, 2} <= pages  # both pages of the PDF


@pytest.mark.parametrize("question", ["x", "? !", "a b c"])
def test_a_question_without_a_word_to_look_for_is_refused(services: Services, question: str) -> None:
    """A one-letter "question" matched a reference list's initials and was answered "confidently"."""
    with pytest.raises(UserError, match="holds no word to look for"):
        services.ask.ask(["notes"], question)


def stored_indexes(home: Path) -> list[Path]:
    return sorted((home / "indexpool").glob("*/*.npz"))


def count_builds(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The documents of every ``CollectionIndex.build`` call from now on."""
    builds: list[list[str]] = []
    build = CollectionIndex.build

    def counting(model: object, documents: list) -> CollectionIndex:
        builds.append([d.id for d in documents])
        return build(model, documents)

    monkeypatch.setattr(CollectionIndex, "build", counting)
    return builds


def test_ask_reuses_the_persisted_index(services: Services, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert services.ask.available_readers() == ["bm25", "indexpool"] and services.ask.default_reader() == "indexpool"
    answer = services.ask.ask(["notes"], "How do whales breathe?", top_k=4)
    assert answer.reader == "indexpool"
    assert list(answer.timings_ms) == [
        "load", "index", "encode_question", "read_select", "read_fetch", "read_attend", "read_other", "score", "total",
    ]  # fmt: skip
    assert answer.read["tokens_read"] > 0 and answer.read["tier2_misses"] > 0 and answer.read["device"] == "cpu"
    stages = sum(ms for name, ms in answer.timings_ms.items() if name != "total")  # every millisecond is named
    assert stages <= answer.timings_ms["total"] + 0.05 and answer.timings_ms["total"] - stages < 5 + 0.02 * stages
    assert len(answer.citations) == 4
    assert [c.score for c in answer.citations] == sorted((c.score for c in answer.citations), reverse=True)
    stored = stored_indexes(home)
    assert len(stored) == len(PARAGRAPHS)  # one per document

    built = answer.timings_ms["index"]
    again = services.ask.ask(["notes"], "How do whales breathe?", top_k=4)
    assert again.timings_ms["index"] < built
    assert [c.text for c in again.citations] == [c.text for c in answer.citations]

    # a new process: restored from the files, not encoded again
    monkeypatch.setattr(CollectionIndex, "build", lambda *_: pytest.fail("the index was rebuilt"))
    restored = Services(home).ask.ask(["notes"], "How do whales breathe?", top_k=4)
    assert restored.citations == answer.citations and restored.answer == answer.answer
    assert stored_indexes(home) == stored

    services.ingest.library.ensure_collection("empty")
    nothing = services.ask.ask(["empty"], "How do whales breathe?")
    assert nothing.citations == [] and nothing.answer.startswith("No sentence")


def test_a_library_indexed_by_the_format_before_is_carried_over_without_encoding(
    services: Services, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexes stored by the format before (15: a references section's entries whole sentences) are not encoded
    again: each gains its sentence kinds anew, read from its document's sentences (the same as a fresh encoding
    gives), its store files move to this format's folder, and the previous folder goes once it is empty."""
    import numpy as np

    from model.inference.qa import FORMAT
    from storage.arrays import read_npz, write_npz_atomic

    answer = services.ask.ask(["notes"], "How do whales breathe?", top_k=4)
    fresh = {path.name: read_npz(path) for path in stored_indexes(home)}
    (folder,) = {path.parent for path in stored_indexes(home)}
    previous = folder.with_name(folder.name.replace(f"index{FORMAT}", f"index{FORMAT - 1}"))
    folder.rename(previous)  # as an earlier format left it: its own sentence kinds (here none), no counted words
    for name, arrays in fresh.items():
        old = arrays | {"format": np.array(FORMAT - 1), "sentence_kind": np.zeros_like(arrays["sentence_kind"])}
        write_npz_atomic(previous / name, **old)
    monkeypatch.setattr(CollectionIndex, "build", lambda *_: pytest.fail("the index was encoded again"))
    again = Services(home)
    assert again.ask.ask(["notes"], "How do whales breathe?", top_k=4).citations == answer.citations
    for name, arrays in fresh.items():
        saved = read_npz(folder / name)
        assert int(saved["format"]) == FORMAT and np.array_equal(saved["sentence_kind"], arrays["sentence_kind"])
    assert not list(previous.glob("*.npy")) and not list(previous.glob("*.npz"))
    again.indexes._prune(folder.name, previous.name)
    assert not previous.exists() and sorted(p.name for p in stored_indexes(home)) == sorted(fresh)


def test_the_index_of_documents_is_the_concatenation_of_theirs(services: Services) -> None:
    model = load_model()
    entries = [("notes", d.id, d.content_hash) for d in services.library.documents("notes")]
    joined = services.indexes.index(model, entries)
    documents = [services.indexes._document_text(i) for _, i, _ in sorted(entries, key=lambda e: e[1])]
    whole = CollectionIndex.build(model, documents)
    assert joined.document_ids == whole.document_ids
    for name in ("sentence_document", "sentence_number", "passage_first", "passage_spans", "idf", "document_emb"):
        assert torch.equal(getattr(joined, name), getattr(whole, name)), name
    for name in ("passage_emb", "sentence_emb"):
        torch.testing.assert_close(getattr(joined, name), getattr(whole, name))
    assert torch.equal(joined.passage_tokens.owner, whole.passage_tokens.owner)


def test_splitting_an_index_gives_back_each_documents_own(services: Services) -> None:
    model = load_model()
    entries = sorted(((d.id, d.content_hash) for d in services.library.documents("notes")), key=lambda e: e[0])
    owns = [services.indexes.document_index(model, *entry) for entry in entries]
    parts = CollectionIndex.concat(owns).split()
    assert len(parts) == len(owns) > 1
    for part, own in zip(parts, owns, strict=True):
        assert part.document_ids == own.document_ids
        for name in ("sentence_document", "sentence_number", "sentence_spans", "passage_first", "passage_spans"):
            assert torch.equal(getattr(part, name), getattr(own, name)), name
        for name in ("passage_token_spans", "document_tokens", "passage_emb", "sentence_emb", "sentence_dense", "idf"):
            assert torch.equal(getattr(part, name), getattr(own, name)), name
        for bags in ("passage_tokens", "sentence_tokens", "passage_words", "sentence_words"):
            for field in fields(getattr(own, bags)):  # the data, not a cache kept beside it
                if field.compare:
                    value = getattr(getattr(own, bags), field.name)
                    assert torch.equal(getattr(getattr(part, bags), field.name), value), (bags, field.name)
        assert part.stores == own.stores


def notes_index(services: Services, spans: str) -> tuple[Model, CollectionIndex, list[str]]:
    """The model, the index of the "notes" collection, and the text of each of its ``spans`` ("passage" or
    "sentence")."""
    model = load_model()
    entries = [("notes", d.id, d.content_hash) for d in services.library.documents("notes")]
    index = services.indexes.index(model, entries)
    documents = {i: services.indexes._document_text(i) for _, i, _ in entries}
    owners, bounds = getattr(index, f"{spans}_document"), getattr(index, f"{spans}_spans").tolist()
    texts = [documents[int(index.document_ids[int(d)])].text[a:b] for d, (a, b) in zip(owners, bounds, strict=True)]
    return model, index, texts


def test_the_dense_term_reads_minilm_embeddings_of_the_passages(services: Services) -> None:
    from model.inference.qa import Question, evidence_terms
    from model.network.minilm import minilm

    model, index, texts = notes_index(services, "passage")
    expected = torch.from_numpy(minilm().encode(texts))
    assert index.passage_dense.dtype == torch.float16
    torch.testing.assert_close(index.passage_dense.float(), expected, atol=2e-3, rtol=0)
    question = Question.encode(model, "Which mammal breathes through a blowhole?")
    dense = evidence_terms(model, index, question)["dense"]
    best = texts[int(dense.argmax())]
    assert "blowhole" in best, best


def test_the_sentence_term_is_the_best_minilm_cosine_of_a_passage_s_sentences(services: Services) -> None:
    from model.inference.qa import Question, evidence_terms
    from model.network.minilm import minilm

    model, index, texts = notes_index(services, "sentence")
    assert index.sentence_dense.dtype == torch.float16
    alone = torch.from_numpy(minilm().encode(texts))  # each sentence by itself; the index reads it in its passage
    assert torch.equal((index.sentence_dense.float() @ alone.T).argmax(1), torch.arange(len(texts)))
    question = Question.encode(model, "Which animal feeds on krill?")
    cosine = index.sentence_dense.float() @ question.dense
    first = index.passage_first.tolist()
    best = torch.stack([cosine[a:b].max() for a, b in zip(first, first[1:], strict=False)])  # per passage, by hand
    torch.testing.assert_close(evidence_terms(model, index, question)["sentence"], (best - best.mean()) / best.std())
    top = int(best.argmax())
    assert "krill" in " ".join(texts[first[top] : first[top + 1]])


def test_a_new_document_is_indexed_alone(services: Services, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    services.ask.ask(["notes"], "What do blue whales eat?")
    builds = count_builds(monkeypatch)
    extra = parsed("birds.txt", ["Penguins cannot fly. They swim with their wings."])
    (event,) = services.ingest.ingest_texts([extra], "notes")
    assert event.status == "ingested"
    answer = services.ask.ask(["notes"], "What do blue whales eat?", top_k=7)
    assert builds == [[str(event.document_id)]]  # the others are read, not encoded again
    assert len(stored_indexes(home)) == len(PARAGRAPHS) + 1
    assert event.document_id in {c.doc for c in answer.citations}  # all seven passages cited


def test_concurrent_asks_build_each_document_once(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = count_builds(monkeypatch)
    answers = []
    asks = [
        threading.Thread(target=lambda: answers.append(services.ask.ask(["notes"], "When did the railway open?")))
        for _ in range(3)
    ]
    for thread in asks:
        thread.start()
    for thread in asks:
        thread.join()
    assert sorted(map(tuple, builds)) == sorted((str(d.id),) for d in services.library.documents("notes"))
    assert len(answers) == 3 and all(a.citations == answers[0].citations for a in answers)


def wait_for(condition: object, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_background_indexes_each_document_as_it_is_ingested(
    services: Services, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert services.indexes.progress(["notes"]).state == "pending"  # no background thread: the first question
    services.indexes.background()  # the documents ingested before it started...
    wait_for(lambda: services.indexes.progress(["notes"]).state == "ready")
    progress = services.indexes.progress(["notes"])
    assert (progress.ready, progress.total) == (len(PARAGRAPHS), len(PARAGRAPHS))
    n = len(PARAGRAPHS)
    assert (
        progress.text() == f"IndexPool index: ready ({n} of {n} documents; 144 tokens: compression is off under 10,000)"
    )

    builds = count_builds(monkeypatch)
    extra = parsed("birds.txt", ["Penguins cannot fly. They swim with their wings."])
    (event,) = services.ingest.ingest_texts([extra], "notes")  # ...and each one ingested since
    wait_for(lambda: services.indexes.progress(["notes"]).state == "ready")
    assert services.indexes.progress(["notes"]).total == len(PARAGRAPHS) + 1
    assert builds == [[str(event.document_id)]]
    answer = services.ask.ask(["notes"], "Which birds cannot fly?", top_k=7)
    assert builds == [[str(event.document_id)]]  # the question encoded no document
    assert event.document_id in {c.doc for c in answer.citations}


def test_a_document_ingested_while_the_library_is_indexed_at_start_is_indexed_next(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first start queues the library's documents (the embedded sample's 549); a document ingested meanwhile is
    indexed next, not after all of them (a new user's upload was asked about while the sample was still queued
    ahead of it, and the question encoded it: 64 s)."""
    builds = count_builds(monkeypatch)
    counted = CollectionIndex.build
    release = threading.Event()

    def held(model: object, documents: list) -> CollectionIndex:
        release.wait(60)  # the first document of the library stays in the encoder until the upload is queued
        return counted(model, documents)

    monkeypatch.setattr(CollectionIndex, "build", held)
    services.indexes.background()
    wait_for(lambda: len(builds) == 1)
    extra = parsed("birds.txt", ["Penguins cannot fly. They swim with their wings."])
    (event,) = services.ingest.ingest_texts([extra], "notes")
    release.set()
    wait_for(lambda: services.indexes.progress(["notes"]).state == "ready")
    assert len(builds) == len(PARAGRAPHS) + 1 and builds[1] == [str(event.document_id)], builds


def test_the_indexes_of_removed_documents_are_pruned(services: Services, home: Path) -> None:
    from app.services.indexes import store_key

    assert services.indexes.build([d.id for d in services.library.documents("notes")]) == len(PARAGRAPHS)
    assert services.indexes.build([d.id for d in services.library.documents("notes")]) == 0  # all there
    services.library.remove("notes", ["whales.txt"])
    stale = home / "indexpool" / "0123456789ab" / "1-00.npz"  # of another checkpoint
    older = home / "indexpool" / f"{load_model().weights_id}-index1" / "1-00.npz"  # of an earlier index format
    for path in (stale, older):
        path.parent.mkdir()
        path.write_bytes(b"")
    services.indexes._prune(store_key(load_model()))
    assert len(stored_indexes(home)) == len(PARAGRAPHS) - 1
    assert not stale.parent.exists() and not older.parent.exists()


def test_without_a_checkpoint_the_baseline_answers(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INDEXPOOL_CHECKPOINT", str(tmp_path / "missing.pt"))
    services = Services(home)
    list(services.ingest.ingest_texts([parsed(s, p) for s, p in PARAGRAPHS.items()], "notes"))
    assert services.ask.available_readers() == ["bm25"] and services.ask.default_reader() == "bm25"
    assert services.ask.ask(["notes"], "How do whales breathe?").reader == "bm25"
    with pytest.raises(UserError, match=r"checkpoint is not installed \(.*missing\.pt\); use --reader bm25"):
        services.ask.ask(["notes"], "How do whales breathe?", reader="indexpool")


def test_an_answer_below_the_calibrated_coverage_says_it_is_not_confident(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from model.network import checkpoint

    load = checkpoint.load_model

    def strict(path: Path | None = None) -> checkpoint.Model:
        model = load(path)
        return replace(model, weights=replace(model.weights, min_coverage=0.3))

    monkeypatch.setattr(checkpoint, "load_model", strict)
    sure = services.ask.ask(["notes"], "How do whales breathe air?", top_k=3, reader="indexpool")
    assert sure.confident and sure.answer.startswith(f"{sure.citations[0].text} [1]"), [
        (c.title, c.text) for c in sure.citations
    ]
    unsure = services.ask.ask(["notes"], "Who painted the Mona Lisa?", top_k=3, reader="indexpool")
    assert not unsure.confident and unsure.answer.startswith("No confident answer")
    assert len(unsure.citations) == 3 and unsure.to_json()["confident"] is False  # the closest passages, flagged


def test_a_paraphrase_close_in_meaning_is_confident_without_the_questions_words(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from model.network import checkpoint

    load = checkpoint.load_model

    def weights(min_coverage: float, confident_dense: float) -> None:
        def loaded(path: Path | None = None) -> checkpoint.Model:
            model = load(path)
            ranked_by_dense = dict(match=0.0, semantic=0.0, doc=0.0, lexical=0.0, dense=1.0)
            thresholds = dict(min_coverage=min_coverage, confident_dense=confident_dense)
            return replace(model, weights=replace(model.weights, **ranked_by_dense, **thresholds))

        monkeypatch.setattr(checkpoint, "load_model", loaded)

    paraphrase = "How do these huge sea creatures get their oxygen?"  # no word of the whale passage but "the"
    weights(0.3, 1.0)
    assert not services.ask.ask(["notes"], paraphrase, top_k=3, reader="indexpool").confident
    weights(0.3, 0.35)
    sure = services.ask.ask(["notes"], paraphrase, top_k=3, reader="indexpool")
    assert sure.confident and sure.citations[0].source == "whales.txt", sure.answer
    assert not services.ask.ask(["notes"], "Who painted the Mona Lisa?", top_k=3, reader="indexpool").confident


RISKS = [
    " ".join(f"Risk {i}.{j}: {topic} could change, and our results of operations could suffer." for j in range(4))
    for i, topic in enumerate(["Demand", "Tax law", "Exchange rates", "Interest rates", "Regulation"])
]
FILINGS = {
    name: [
        f"{company} designs, manufactures and sells network equipment to customers in more than 60 countries.",
        f"As of December 31, 2020, we had approximately {staff} full-time employees, of whom about 40 percent were"
        " located outside the United States. We also maintain employee networks.",
        "Our supply chain depends on a few contract manufacturers; a disruption there could delay shipments.",
        "We face intense competition, and our competitors may have greater resources than we do.",
        *RISKS,  # a filing's own sentences seldom name the company (it says "we"): 1 of 25 here
    ]
    for name, company, staff in [("borealis-10k.txt", "Borealis Networks", "3,950"), ("acme-10k.txt", "Acme", "14,300")]
}


def test_a_question_naming_a_company_reads_its_filing_and_quotes_the_figure(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The company's name picks its filing (the lexical term, whose bags hold the title and file name) without pulling
    the ranking to the sentences that repeat the name; a "how many" question cites the sentence with the figure, not
    its neighbour about "employee networks"; the answer quotes the named company's filing only."""
    from model.network import checkpoint

    load = checkpoint.load_model

    def loaded(path: Path | None = None) -> checkpoint.Model:
        model = load(path)
        ranked = dict(match=0.0, semantic=0.0, doc=0.0, lexical=1.0, dense=1.0)
        return replace(model, weights=replace(model.weights, **ranked, min_coverage=0.0))

    monkeypatch.setattr(checkpoint, "load_model", loaded)
    list(services.ingest.ingest_texts([parsed(s, p) for s, p in FILINGS.items()], "filings"))
    for company, staff in [("Borealis", "3,950"), ("Acme", "14,300")]:
        answer = services.ask.ask(["filings"], f"How many employees does {company} have?", top_k=3, reader="indexpool")
        assert answer.citations[0].text.startswith(f"As of December 31, 2020, we had approximately {staff}"), answer
        assert answer.citations[0].source == f"{company.lower()}-10k.txt"
        assert answer.answer == f"{answer.citations[0].text} [1]"  # not the other company's count beside it


def test_a_sentence_repeated_across_pages_is_cited_once(services: Services) -> None:
    """Boilerplate that a filing repeats on several pages (a risk factor, a footer) fills one citation, not all."""
    repeated = "We depend on the continued service of our senior management and other skilled employees."
    pages = [repeated, "Our senior management team has led the company since 2011.", repeated, repeated]
    pages += ["Employees receive training in safety every year.", repeated]
    list(services.ingest.ingest_texts([parsed("handbook.txt", pages)], "handbook"))
    answer = services.ask.ask(["handbook"], "Do we depend on our senior management?", top_k=3, reader="indexpool")
    texts = [c.text for c in answer.citations]
    assert texts[0] == repeated and len(texts) == 3 and len(set(texts)) == 3, texts


def test_the_words_naming_a_document_are_left_to_the_lexical_term(checkpoint: Path) -> None:
    """Capitalised words found in every passage of a document (its title and file name are in each passage's word
    bag) and in few of its own sentences are taken out of what the match, semantic and dense terms read, when other
    words are left; a name its sentences use more often is the document's topic, and stays."""
    from model.inference.qa import Question, without_names
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    index = CollectionIndex.build(
        model,
        [
            document_text(name, "\n\n".join(paragraphs), f"{name.split('-')[0].title()} Form 10-K {name}")
            for name, paragraphs in FILINGS.items()
        ],
    )
    assert without_names(index, "How many employees does Borealis have?") == "How many employees does have?"
    assert (
        without_names(index, "What does Acme's filing say about suppliers?") == "What does filing say about suppliers?"
    )
    assert without_names(index, "Borealis?") == "Borealis?"  # nothing would be left
    assert without_names(index, "How many Employees work there?") == "How many Employees work there?"  # not a name
    topic = [
        "S2ORC is a corpus of papers.",
        "S2ORC contains 81.1M papers.",
        "S2ORC links citations.",
        *RISKS,
    ]  # 3 of 23
    corpus = CollectionIndex.build(model, [document_text("s2orc", "\n\n".join(topic), "S2ORC: a corpus s2orc.pdf")])
    assert without_names(corpus, "How many papers does S2ORC contain?") == "How many papers does S2ORC contain?"
    company = ["AEON is a biopharmaceutical company.", "AEON has generated no revenue.", *RISKS]  # 2 of 22: a name
    filing = CollectionIndex.build(model, [document_text("aeon", "\n\n".join(company), "AEON Biopharma Form 10-Q")])
    assert without_names(filing, "Has AEON generated any revenue?") == "Has generated any revenue?"
    assert Question.encode(model, "How many employees does Acme have?", index).names_document
    assert not Question.encode(model, "How many employees are there?", index).names_document


def test_a_question_naming_a_document_reads_it_first_and_fragments_come_last(checkpoint: Path) -> None:
    """A capitalised word of the question in the titles of some documents, and in no other document's text, puts
    those documents' passages first; a passage without a whole sentence (a table cell, a heading left alone) comes
    after every passage that has one."""
    from model.inference.qa import Question, named_documents, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    documents = [
        document_text(name, "\n\n".join(paragraphs), f"{name.split('-')[0].title()} Form 10-K {name}")
        for name, paragraphs in FILINGS.items()
    ]
    whales = "Blowhole\n\n" + "\n\n".join(PARAGRAPHS["whales.txt"])
    documents.append(document_text("whales", whales, "Whales and their networks"))
    index = CollectionIndex.build(model, documents)
    acme = index.document_ids.index(next(name for name in FILINGS if name.startswith("acme")))
    assert named_documents(index, "How many employees does Acme have?") == (acme,)
    assert named_documents(index, "How many employees are there?") == ()
    assert named_documents(index, "What do Whales eat?") == (index.document_ids.index("whales"),)
    assert named_documents(index, "Which Networks are there?") == ()  # the filings' text says "network": a topic
    filings = tuple(sorted(index.document_ids.index(name) for name in FILINGS))
    assert named_documents(index, "What does the Form say?") == filings  # in two of the three titles
    owner = index.passage_document.tolist()
    question = Question.encode(model, "What does Acme say about its supply chain?", index)
    hits = list(ranked_hits(model, index, question))
    firsts = [owner[h.passage] for h in hits[: owner.count(acme)]]
    assert firsts == [acme] * owner.count(acme), firsts
    whale = Question.encode(model, "What is a blowhole?", index)
    hits = list(ranked_hits(model, index, whale))
    whole = [bool(index.sentence_kind[h.sentence] & WHOLE) for h in hits]
    assert whole == [True] * (len(hits) - 1) + [False], whole  # "Blowhole", the fragment, comes last


def test_a_name_another_document_cites_and_title_words_in_a_row_name_a_document(checkpoint: Path) -> None:
    """A name that another document's text uses once is still a name (the walk's "What license is S2ORC released
    under?" cited Multi-LexSum's license: a paper that cites S2ORC once made S2ORC a topic); capitalised words in a
    row name the document whose title holds them all ("the Beyond Summarization study": other papers' text says
    "beyond", another title "summarization"), and a row that no title holds is read word by word."""
    from model.inference.qa import named_documents
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    gleaner = [" ".join(f"Gleaner holds {n} papers of field {i}." for i in range(3)) for n in range(3, 6)]  # 9 uses
    documents = [
        document_text("gleaner", "\n\n".join([*gleaner, *RISKS]), "Gleaner: An Open Corpus of Papers"),
        document_text("beyond", "\n\n".join(["We build on Gleaner for our study.", *RISKS]), "Beyond Reading: Tools"),
        document_text("aids", "\n\n".join(["Reading goes beyond the abstract.", *RISKS]), "Reading Aids for Papers"),
    ]
    index = CollectionIndex.build(model, documents)
    row = {name: index.document_ids.index(name) for name in ("gleaner", "beyond", "aids")}
    assert named_documents(index, "What license is Gleaner released under?") == (row["gleaner"],)  # 9 of 10 uses
    assert named_documents(index, "What did the Beyond Reading study find?") == (row["beyond"],)
    assert named_documents(index, "What does the Gleaner Team say?") == (row["gleaner"],)  # "Team": in no title
    assert named_documents(index, "What do Reading tools offer?") == tuple(sorted((row["beyond"], row["aids"])))


def test_a_passage_of_questions_comes_after_the_passages_that_answer(checkpoint: Path) -> None:
    """A questionnaire ("What (other) tasks could the dataset be used for? Please provide a description.") is like
    the question, not an answer to it: its passage comes after every passage that says something, though it
    scores higher (the walk's "What dataset does the paper introduce?" cited five questionnaire sentences)."""
    from model.inference.qa import Question, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    sheet = (
        "What dataset does the paper introduce? What (other) tasks could the dataset be used for? Please provide a "
        "description. Does the dataset relate to people? Who created the dataset?"
    )
    paper = "We built a corpus of 9,280 expert summaries of civil rights lawsuits, released for research."
    documents = [document_text("sheet", sheet, "Datasheet"), document_text("paper", paper, "A corpus of summaries")]
    index = CollectionIndex.build(model, documents)
    assert index.passage_asks.tolist() == [True, False]
    question = Question.encode(model, "What dataset does the paper introduce?", index)
    hits = list(ranked_hits(model, index, question))
    assert [index.document_ids[int(index.passage_document[h.passage])] for h in hits] == ["paper", "sheet"]
    assert hits[1].score > hits[0].score  # the questionnaire scores higher: the rule, not the score, puts it last


def test_a_citation_mark_is_not_a_figure(checkpoint: Path) -> None:
    """A "how many" question cites the sentence quoting the count, not its neighbour (closer in words) whose only
    digits are a citation mark."""
    from model.inference.qa import Question, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    text = "The corpus holds summaries of civil rights cases [44]. In all there are 9,280 of them, written by experts."
    index = CollectionIndex.build(model, [document_text("lexsum", text, "A corpus of case summaries")])
    sentences = [text[a:b] for a, b in index.sentence_spans.tolist()]
    question = Question.encode(model, "How many summaries does the corpus hold?", index)
    (hit,) = ranked_hits(model, index, question)
    assert sentences[hit.sentence].startswith("In all there are 9,280"), sentences[hit.sentence]


def test_a_count_is_cited_where_a_figure_counts_the_thing_asked_about_of_its_subject(checkpoint: Path) -> None:
    """ "How many papers does S2ORC contain?" cites the sentence whose figure counts papers and that names S2ORC,
    before a sentence sharing more of the question's words whose figure counts another corpus's papers."""
    from model.inference.qa import Question, counting_sentences, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    paragraphs = [
        "MAG contained 213M papers and other documents: its papers contain many papers cited.",
        *RISKS,
        "Each paper of S2ORC has metadata. S2ORC is built from PDFs."
        " S2ORC consists of 81.1M papers and 380.5M citation links.",
    ]  # S2ORC in 3 of 25 sentences: its paper's topic (12 %), not a name to leave out (MAX_NAME_SHARE)
    index = CollectionIndex.build(model, [document_text("s2orc", "\n\n".join(paragraphs), "A corpus s2orc.pdf")])
    sentences = index.sentence_spans.tolist()
    text = "\n\n".join(paragraphs)
    question = Question.encode(model, "How many papers does S2ORC contain?", index)
    counts = counting_sentences(index, question).tolist()
    counting = [text[a:b] for (a, b), c in zip(sentences, counts, strict=True) if c]
    assert counting == ["S2ORC consists of 81.1M papers and 380.5M citation links."], counting
    hit = next(iter(ranked_hits(model, index, question)))
    a, b = sentences[hit.sentence]
    assert text[a:b].startswith("S2ORC consists of 81.1M papers"), text[a:b]
    elsewhere = Question.encode(model, "How many papers are there?", index)  # no subject: both count papers
    assert int(counting_sentences(index, elsewhere).sum()) == 2
    compound = Question.encode(model, "What corpus does the paper introduce, and how many papers does it hold?", index)
    assert compound.asks_figure and counting_sentences(index, compound).any()  # the count asked after a comma
    assert Question.encode(model, "What was the citation figure for S2ORC in 2019?", index).asks_figure


def test_a_count_in_a_fragment_leaves_the_passage_its_whole_sentence(checkpoint: Path) -> None:
    """When the only sentence counting what the question asks about is a fragment, the passage's whole sentence
    quoting a figure is cited, not whichever sentence comes first."""
    from model.inference.qa import Question, counting_sentences, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    text = "Employees 3,950. Our firm has offices in 12 cities and people in each of them."
    index = CollectionIndex.build(model, [document_text("firm", text, "The firm")])
    question = Question.encode(model, "How many employees does the firm have?", index)
    assert counting_sentences(index, question).tolist() == [True, False]
    (hit,) = ranked_hits(model, index, question)
    a, b = index.sentence_spans[hit.sentence].tolist()
    assert text[a:b].startswith("Our firm has offices in 12 cities"), text[a:b]


def quoted_sentences(checkpoint: Path, text: str, title: str, question: str) -> list[str]:
    """The sentence quoted for each passage of the one document ``text`` (titled ``title``), best first."""
    from model.inference.qa import Question, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    index = CollectionIndex.build(model, [document_text("document", text, title)])
    spans = index.sentence_spans.tolist()
    return [
        text[slice(*spans[hit.sentence])] for hit in ranked_hits(model, index, Question.encode(model, question, index))
    ]


def test_a_sentence_saying_where_a_table_is_comes_after_what_it_shows(checkpoint: Path) -> None:
    """S2ORC's "Numbers of PDFs removed by these filters are given in Table 8." was cited for "Which PDF filters
    …?": within a passage, the sentence that says what is shown is cited, and a paragraph that only says where
    (before the table's cells) comes after every passage that says something."""
    text = (
        "We filter PDFs in two ways. Numbers of PDFs removed by these filters are given in Table 8. The filters drop"
        " PDFs over 50 pages and PDFs whose pages are wider than tall.\n\n"
        "Numbers of PDFs removed by the filters and by later filters are given in Table 9.\n\n"
        "Table 9: Filters. PyPDF2 error 0.54M\n\nParsed papers are kept in one file per shard."
    )
    quoted = quoted_sentences(checkpoint, text, "A corpus of papers", "Which filters remove PDFs?")
    assert "given in" not in quoted[0] and "Table 8" not in " ".join(quoted), quoted
    assert quoted.index("Numbers of PDFs removed by the filters and by later filters are given in Table 9.") >= 2, (
        quoted
    )


def test_a_question_asking_what_a_named_document_proposes_cites_the_sentence_that_introduces_it(
    checkpoint: Path,
) -> None:
    """ "What does the PaperMage paper propose?" and "What is PaperMage?" cite the abstract's "We introduce papermage,
    …" — not the title and author lines, which name it too, nor the sentence that says "paper" most; a question that
    asks more than what it is ("Who wrote …") is ranked as any other."""
    from model.inference.qa import Question, lead_sentences, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    paragraphs = [
        "PaperMage: A Unified Toolkit for Processing Scientific Documents Kyle Lo Zejiang Shen Benjamin Newman",
        *RISKS[:2],
        "We introduce papermage, an open-source Python toolkit for processing visually-rich scientific documents.",
        *RISKS[2:],
        "All authors contributed to the papermage paper: this paper is their paper, and papermage is their paper's.",
    ]
    text = "\n\n".join(paragraphs)
    other = "\n\n".join(["CiteSee highlights citations in a paper reader.", *RISKS])
    index = CollectionIndex.build(
        model,
        [
            document_text("papermage", text, "PaperMage: A Unified Toolkit papermage.pdf"),
            document_text("citesee", other, "CiteSee: Augmenting Citations citesee.pdf"),
        ],
    )
    spans = index.sentence_spans.tolist()
    for asked in ("What does the PaperMage paper propose?", "What is PaperMage?"):
        question = Question.encode(model, asked, index)
        leading = [
            text[a:b] for (a, b), lead in zip(spans, lead_sentences(index, question).tolist(), strict=True) if lead
        ]
        assert leading == [paragraphs[3]], (asked, leading)
        hit = next(iter(ranked_hits(model, index, question)))
        assert hit.sentence == lead_sentences(index, question).nonzero().item(), asked
    who = Question.encode(model, "Who wrote the PaperMage paper?", index)
    assert not lead_sentences(index, who).any()


def test_a_sentence_that_asks_is_answered_by_the_sentence_after_it(checkpoint: Path) -> None:
    """A passage whose sentence closest to the question is itself a question (a meeting's "Has HEFCW done any
    assessment …?", an FAQ's heading) cites the reply after it — past a short interjection — not the question again;
    a passage that only asks cites its question."""
    from model.inference.qa import QUESTION, Question, best_sentence, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    turns = [
        "Sian Gwenllian AM: Has HEFCW done any assessment of the effect of underfunding research in universities?",
        "Kirsty Williams AM: Okay .",
        "Dr David Blaney: Not directly: we relied on the review that Graeme Reid made for the Welsh Government.",
    ]
    text = "\n".join(turns)
    index = CollectionIndex.build(model, [document_text("committee", text, "Committee transcript")])
    spans = index.sentence_spans.tolist()
    asked = "Has HEFCW done any assessment of the effect of underfunding research?"
    question = Question.encode(model, asked, index)
    hit = next(iter(ranked_hits(model, index, question)))
    a, b = spans[hit.sentence]
    assert text[a:b].startswith("Dr David Blaney: Not directly"), text[a:b]
    index.sentence_kind &= ~QUESTION  # the question's own sentence scores best: without the bit it is cited
    a, b = spans[best_sentence(model, index, question, hit.passage)]
    assert text[a:b].startswith("Sian Gwenllian AM: Has HEFCW"), text[a:b]
    only = CollectionIndex.build(model, [document_text("asks", turns[0], "Questions")])
    (alone,) = ranked_hits(model, only, Question.encode(model, asked, only))
    assert alone.sentence == 0


def test_a_question_asking_when_cites_the_sentence_that_gives_a_date(checkpoint: Path) -> None:
    """ "When was the charter of rights established?" cites the passage's sentence that gives a date, not the one
    that repeats the question's words; without the date rule the other is cited."""
    from model.inference.qa import Question, best_sentence, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    text = (
        "The charter of rights was established to protect the rights of every citizen of the country. "
        "It became law on April 17, 1982, with the rest of the act."
    )
    index = CollectionIndex.build(model, [document_text("charter", text, "The charter")])
    spans = index.sentence_spans.tolist()
    question = Question.encode(model, "When was the charter of rights established?", index)
    assert question.asks_date
    hit = next(iter(ranked_hits(model, index, question)))
    a, b = spans[hit.sentence]
    assert text[a:b].startswith("It became law on April 17, 1982"), text[a:b]
    question.asks_date = False
    a, b = spans[best_sentence(model, index, question, hit.passage)]
    assert text[a:b].startswith("The charter of rights was established"), text[a:b]


def test_a_question_naming_a_speaker_cites_what_that_speaker_says(checkpoint: Path) -> None:
    """A new user's walk: "What is the name of the Industrial Designer?" cited another speaker's introduction. In a
    transcript, a question that names a speaker cites, in each passage, a sentence that speaker says (QMSum asks
    "What did C think …?" of "Professor C"); without the rule the sentence sharing most words is cited."""
    from model.inference.qa import Question, best_sentence, ranked_hits
    from model.research.evaluation.passages import document_text

    model = load_model(checkpoint)
    text = (
        "Project Manager: Let us introduce ourselves now , and then talk about the budget .\n"
        "Marketing: So , my name is Cat , and I am the designer of the marketing plan here .\n"
        "Industrial Designer: Right . Um my name is Gaurav , and I draw the remotes .\n"
        "Professor C: The money for the remote is too small , in my view .\n"
        "Grad A: I think the budget is fine , and I think about the budget every day .\n"
    )
    index = CollectionIndex.build(model, [document_text("meeting", text, "Kickoff meeting")])
    spans = index.sentence_spans.tolist()
    for asked, said, otherwise in [
        ("What is the name of the Industrial Designer?", "Um my name is Gaurav", "Marketing: So"),
        ("What did C think about the budget?", "Professor C: The money", "Grad A: I think"),
    ]:
        question = Question.encode(model, asked, index)
        hit = next(iter(ranked_hits(model, index, question)))
        a, b = spans[hit.sentence]
        assert text[a:b].startswith(said), (asked, text[a:b])
        a, b = spans[best_sentence(model, index, question, hit.passage)]
        assert text[a:b].startswith(otherwise), (asked, text[a:b])


def test_the_cited_sentence_within_a_passage_is_weighed_by_its_words(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cited sentence of a passage is chosen by its token match and BM25 more than by its MiniLM cosine
    (``CITE_MATCH``, ``CITE_LEXICAL``, ``CITE_DENSE``: ``scripts/fit_cite.py``): over an L-Eval multi-document input
    asked "… do you have a phone number I can call?", the passage on caregiver benefits cites the sentence giving the
    Caregiver Support Line's number; with the weights of before, "You ll need to apply for these benefits."."""
    import model.inference.qa as qa
    from model.research.evaluation.datasets import convert_leval_qa
    from model.research.evaluation.passages import document_text

    documents, questions = convert_leval_qa(shared_data / "leval" / "Open-ended-tasks" / "multidoc_qa.jsonl")
    document = next(d for d in documents if "Caregiver Support Line at 855" in d["text"])
    asked = next(q for q in questions if q["doc"] == document["id"] and "phone number I can call" in q["question"])
    model = load_model()  # the shipped checkpoint
    index = CollectionIndex.build(model, [document_text(document["id"], document["text"], "")])
    question = qa.Question.encode(model, asked["question"], index)
    text, spans = document["text"], index.sentence_spans.tolist()
    passage = next(
        h.passage
        for h in qa.answer(model, index, question, 5)
        if "Caregiver Support Line at 855" in text[slice(*index.passage_spans[h.passage].tolist())]
    )
    a, b = spans[qa.best_sentence(model, index, question, passage)]
    assert "Contact the Caregiver Support Line at 855 - 260 - 3274" in text[a:b], text[a:b]
    monkeypatch.setattr(qa, "CITE_MATCH", 2 / 3)
    monkeypatch.setattr(qa, "CITE_LEXICAL", 2 / 3)
    monkeypatch.setattr(qa, "CITE_DENSE", 1.0)
    a, b = spans[qa.best_sentence(model, index, question, passage)]
    assert text[a:b] == "You ll need to apply for these benefits.", text[a:b]


def test_a_question_naming_an_earnings_call_s_speaker_cites_what_they_say(checkpoint: Path) -> None:
    """An earnings call writes each turn under a "Name - Title Speaking." line: "What did Jerry Turin say about the
    margins?" cites the CFO's sentence on margins, not the CEO's, and the citation names the CFO's turn."""
    text = (
        "Good afternoon and welcome to the Acme first quarter conference call.\n"
        "Greg Dougherty - Chief Executive Officer Speaking.\n"
        "Thank you. Our gross margins improved a lot this quarter and we expect the margins to improve further.\n"
        "Jerry Turin - Chief Financial Officer Speaking.\n"
        "Thanks Greg. Gross margin was 18 percent, up from 12 percent.\n"
    )
    first = quoted_sentences(checkpoint, text, "Acme call", "What did Jerry Turin say about the margins?")[0]
    assert first.startswith("Gross margin was 18 percent"), first


def test_a_question_naming_a_speaker_ranks_first_the_passage_where_they_speak_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "What did C think about the budget?" over a meeting whose budget talk is mostly Grad A's and Grad B's: the
    speaker terms (the best BM25 and MiniLM cosine among the sentences Professor C says in each passage, 0 where C
    says none) rank C's passage first; at weight 0 the others' passage comes first."""
    import model.inference.qa as qa
    from model.research.evaluation.passages import document_text

    model = load_model()  # the shipped checkpoint
    blocks = [
        "Grad A: I think the budget is fine .\nGrad B: I think the budget matters , and I think about the budget .",
        "Professor C: The budget is too small .\nGrad A: We should order pizza for the lunch .",
        "Grad B: The microphones work well today .\nProfessor C: Let us read the digits now .",
        "Grad A: The schedule for the next meeting is Tuesday .\nGrad B: Fine .",
    ]
    index = CollectionIndex.build(model, [document_text("meeting", "\n\n".join(blocks), "Meeting")])
    assert index.passages == 4
    question = qa.Question.encode(model, "What did C think about the budget?", index)
    cosines = qa.cosines(index.sentence_dense, question.dense)
    for term in qa.speaker_terms(index, question, cosines).values():
        assert int(term.argmax()) == 1 and term[0] == 0 and term[3] == 0, term
    assert next(iter(qa.ranked_hits(model, index, question))).passage == 1
    monkeypatch.setattr(qa, "SPEAKER_LEXICAL", 0.0)
    monkeypatch.setattr(qa, "SPEAKER_DENSE", 0.0)
    assert next(iter(qa.ranked_hits(model, index, question))).passage == 0


def test_a_sentence_deep_in_an_earnings_call_s_long_turn_is_cited_with_its_speaker(services: Services) -> None:
    """A call's turn follows its "Name - Title Speaking." line and runs on for thousands of characters: a sentence
    far into it (8,000 characters after the label) is cited with that speaker, the call's opening with none."""
    filler = " ".join(f"Our plant number {n} ran at full capacity during the period." for n in range(140))
    call = (
        "Good afternoon and welcome to the Acme first quarter conference call.\n"
        "Greg Dougherty - Chief Executive Officer Speaking.\nThank you. We had a pivotal quarter.\n"
        "Pete Mangan - Vice President, Corporate Finance Speaking.\n"
        f"Thanks Greg. {filler} Our non-GAAP gross margins for the quarter were 12.6%.\n"
    )
    assert call.index("Our non-GAAP") - call.index("Pete Mangan") > 8000
    document = parse_text("call.txt", "", "txt", call, hashlib.sha256(call.encode()).hexdigest())
    assert [e.status for e in services.ingest.ingest_texts([document], "calls")] == ["ingested"]
    answer = services.ask.ask(["calls"], "What were the non-GAAP gross margins for the quarter?", 3, "bm25")
    first = answer.citations[0]
    assert (first.text, first.speaker) == (
        "Our non-GAAP gross margins for the quarter were 12.6%.",
        "Pete Mangan - Vice President, Corporate Finance",
    )
    opening = services.ask.ask(["calls"], "Which conference call is this?", 3, "bm25").citations[0]
    assert opening.text.startswith("Good afternoon") and opening.speaker == ""


def test_the_bm25_reader_is_not_confident_in_a_sentence_sharing_one_word_of_several(services: Services) -> None:
    """BM25 answered "Which railway team won the World Cup?" with the railway sentence as if it were the answer."""
    unsure = services.ask.ask(["notes"], "Which railway team won the World Cup?", top_k=3, reader="bm25")
    assert not unsure.confident and unsure.answer.startswith("No confident answer"), unsure.answer
    assert unsure.citations[0].text.startswith("The first public railway")  # the closest sentence, flagged
    sure = services.ask.ask(["notes"], "When did the first steam railway open?", top_k=3, reader="bm25")
    assert sure.confident and sure.answer.startswith(f"{sure.citations[0].text} [1]")
    assert services.ask.ask(["notes"], "krill", top_k=3, reader="bm25").confident  # its only word


@pytest.mark.parametrize("reader", ["bm25", "indexpool"])
def test_a_transcript_sentence_is_cited_with_its_speaker(services: Services, reader: str) -> None:
    """A new user's walk: "Um my favourite animal … is a cow ." was cited without who said it. The speaker of the
    turn goes with the citation and leads the quoted answer; a lone "Note:" line names no speaker."""
    meeting = (
        "Project Manager: Okay, let us start the meeting now. We have three things to do today.\n"
        "Industrial Designer: Right. My favourite animal is a cow, because cows are so calm.\n"
        "Marketing: Mine is a dog. Dogs are loyal friends.\n"
    )
    memo = "Note: the office closes early on Friday. The cafeteria serves tomato soup on Fridays.\n"
    documents = [
        parse_text(s, "", "txt", t, hashlib.sha256(t.encode()).hexdigest())
        for s, t in [("meeting.txt", meeting), ("memo.txt", memo)]
    ]
    assert all(e.status == "ingested" for e in services.ingest.ingest_texts(documents, "talk"))
    answer = services.ask.ask(["talk"], "What is the favourite animal, a cow?", top_k=3, reader=reader)
    first = answer.citations[0]
    assert (first.text, first.speaker) == (
        "My favourite animal is a cow, because cows are so calm.",
        "Industrial Designer",
    )
    assert answer.answer.startswith("Industrial Designer: My favourite animal is a cow")
    assert_library_sentences(services, answer)  # the text cited is still the library's sentence
    answer = services.ask.ask(["talk"], "What soup does the cafeteria serve?", top_k=3, reader=reader)
    assert (answer.citations[0].text, answer.citations[0].speaker) == (
        "The cafeteria serves tomato soup on Fridays.",
        "",
    )


def test_a_references_entry_is_cited_after_the_papers_own_sentences(services: Services) -> None:
    """A paper's references list repeats the words of the works it cites ("[2] Sara Bell … Patients find mistakes
    in their clinical notes …"): its entries are cited after every whole sentence of the paper's own text, an
    appendix after the list ("A Study Details", a lettered heading) included."""
    paper = (
        "Notes for Patients\n\nAbstract\n\nWe study how patients read their clinical notes.\n\n"
        "1 Introduction\n\nAbout one in five readers find a mistake in the notes written about them [2]. "
        "Clinicians write the notes after each visit.\n\n"
        "References\n\n[1] Tom Reed. 2019. Reading clinical notes. Health Journal 3.\n\n"
        "[2] Sara Bell. 2021. Patients find mistakes in their clinical notes: how often patients find errors.\n\n"
        "A Study Details\n\nPatients who find an error in their notes most often report it to the clinic.\n"
    )
    document = parse_text("notes.txt", "", "txt", paper, hashlib.sha256(paper.encode()).hexdigest())
    assert [e.status for e in services.ingest.ingest_texts([document], "papers")] == ["ingested"]
    answer = services.ask.ask(["papers"], "How often do patients find errors in their clinical notes?", 8)
    cited = [c.text for c in answer.citations]
    listed = [paper.index("[1]") <= c.start < paper.index("A Study") for c in answer.citations]
    own = {
        "We study how patients read their clinical notes.",
        "About one in five readers find a mistake in the notes written about them [2].",
        "Patients who find an error in their notes most often report it to the clinic.",  # the appendix's
    }
    assert set(cited[:3]) == own and listed[3:] and all(listed[3:-1]), cited  # then the list; the title, a fragment


def test_the_background_thread_loads_minilm_before_the_first_question(home: Path, checkpoint: Path) -> None:
    """A served library whose documents are all indexed: the first question waited 1.2 s for MiniLM to load (its
    ``encode_question`` stage); the background thread loads it as the app starts (in a fresh process: this one's
    tests have loaded it long ago)."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from app.services import Services\n"
        "from model.network import minilm\n"
        "services = Services(Path(sys.argv[1]))\n"
        "services.indexes.background()\n"
        "deadline = time.monotonic() + 120\n"
        "while not minilm._loaded and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('loaded' if minilm._loaded else 'not loaded')\n"
    )
    env = os.environ | {"INDEXPOOL_CHECKPOINT": str(checkpoint)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(home)], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.stdout.strip().endswith("loaded") and "not loaded" not in done.stdout, done.stdout + done.stderr

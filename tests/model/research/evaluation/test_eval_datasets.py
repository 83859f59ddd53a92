"""The converters on the real shared data (skipped when the folder is absent) and on hand-made cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model.inference.summarizers import Lead
from model.research.evaluation.baselines import fit_budget
from model.research.evaluation.datasets import convert_qmsum, convert_scisumm, main, read_jsonl, strip_abstract
from model.research.evaluation.metrics import rouge
from model.research.evaluation.passages import document_text


def test_strip_abstract_cuts_the_abstract_run_and_keeps_a_later_echo() -> None:
    abstract = "We present a fast parser for long sentences. It beats all baselines on the treebank."
    sentences = [
        "Title Page University of Nowhere We present a fast parser for long sentences.",
        "It beats all baselines on the treebank.",
        "1 Introduction Parsing is hard.",
        "Many parsers are slow on long input.",
        "In conclusion, we present a fast parser for long sentences.",
    ]
    cut, coverage = strip_abstract(sentences, abstract)
    assert cut == [0, 1]
    assert coverage == pytest.approx(13 / 14)  # all bigrams but the one spanning the two sentences
    assert strip_abstract(["Nothing alike here."], abstract) == ([], 0.0)


def test_qmsum_val_questions_point_at_their_turns(shared_data: Path) -> None:
    documents, questions = convert_qmsum(shared_data / "qmsum" / "val")
    assert len(documents) == 35
    assert len(questions) == 272
    assert sum(q["kind"] == "specific" for q in questions) == 237
    texts = {d["id"]: d["text"] for d in documents}
    meeting = json.loads((shared_data / "qmsum" / "val" / "Bed002.json").read_text())
    first = next(q for q in questions if q["id"] == "Bed002/specific/1")
    assert first["question"] == meeting["specific_query_list"][1]["query"]
    assert first["answers"] == [meeting["specific_query_list"][1]["answer"]]
    for span, (a, b) in zip(first["evidence"], meeting["specific_query_list"][1]["relevant_text_span"], strict=True):
        turns = meeting["meeting_transcripts"]
        evidence = texts["Bed002"][span["start"] : span["end"]]
        assert evidence.startswith(f"{turns[int(a)]['speaker']}: {turns[int(a)]['content']}")
        assert evidence.endswith(turns[int(b)]["content"])
        assert evidence.count("\n") == int(b) - int(a)
    general = [q for q in questions if q["kind"] == "general"]
    assert all(
        q["evidence"] == [{"doc": q["id"].split("/")[0], "start": 0, "end": len(texts[q["id"].split("/")[0]])}]
        for q in general
    )


def test_scisumm_inputs_do_not_start_with_the_abstract(shared_data: Path) -> None:
    papers = list(convert_scisumm(shared_data / "scisumm"))
    ids = (shared_data / "scisumm" / "ids_ge5000w.txt").read_text().split()
    assert [p["id"] for p in papers] == ids
    for paper in papers:
        assert len(paper["text"].split()) >= 4000
        reference_file = shared_data / "scisumm" / "papers" / paper["id"] / "summary" / f"{paper['id']}.abstract.txt"
        assert paper["reference"].split() == reference_file.read_text().split()
        document, budget = document_text(paper["id"], paper["text"]), len(paper["reference"].split())
        lead = fit_budget([document.sentence_text(i) for i in Lead().choose(document, budget)], budget)
        assert rouge(lead, [paper["reference"]], ("rouge2",))["rouge2"] < 0.5, paper["id"]  # no copied abstract
    assert sum(p["abstract_coverage_cut"] >= 0.5 for p in papers) >= 85


def test_main_writes_the_documented_files(shared_data: Path, tmp_path: Path) -> None:
    assert main(["--data", str(shared_data), "--out", str(tmp_path)]) == 0
    docs = read_jsonl(tmp_path / "qmsum_val_docs.jsonl")
    assert set(docs[0]) == {"id", "text", "title"}
    question = read_jsonl(tmp_path / "qmsum_val_specific_questions.jsonl")[0]
    assert {"id", "question", "answers", "evidence"} <= set(question)
    assert len(read_jsonl(tmp_path / "qmsum_train_questions.jsonl")) == 1257
    assert {"id", "text", "reference"} <= set(read_jsonl(tmp_path / "scisumm_ge5000w.jsonl")[0])


def test_read_jsonl_skips_blank_lines(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"id": 1}\n\n{"id": 2}\n')
    assert read_jsonl(tmp_path / "rows.jsonl") == [{"id": 1}, {"id": 2}]

"""End to end: ``indexpool eval qa|summarize|niah`` with tiny limits, as a table and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from model.research.evaluation.datasets import convert_qmsum, convert_scisumm, write_jsonl

QA_KEYS = {"recall@1", "recall@5", "recall@10", "document@1", "rougeL", "latency_ms_p50", "latency_ms_p95"}
ROUGE_KEYS = {"rouge1", "rouge2", "rougeL", "rougeLsum"}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _qmsum_qa(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> dict:
    """``eval qa --json`` over the first QMSum val meeting (the meeting of the first questions keeps it short)."""
    documents, questions = convert_qmsum(shared_data / "qmsum" / "val")
    write_jsonl(tmp_path / "docs.jsonl", documents[:1])
    write_jsonl(tmp_path / "q.jsonl", questions)
    return _json(capsys, _qa_args(tmp_path, *options, "--json"))


def _qa_args(tmp_path: Path, *options: str) -> list[str]:
    """``eval qa`` over ``tmp_path``'s docs.jsonl and q.jsonl."""
    return ["eval", "qa", "--corpus", str(tmp_path / "docs.jsonl"), "--questions", str(tmp_path / "q.jsonl"), *options]


def test_eval_qa_on_qmsum(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _qmsum_qa(shared_data, tmp_path, capsys, "--limit", "3")
    assert report["questions"] == 3 and report["documents"] == 1
    for name in ("indexpool", "bm25", "dense"):  # the shipped checkpoint (model/assets/indexpool.pt) runs
        row = report["systems"][name]
        assert QA_KEYS <= set(row)
        assert 0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= 1
        assert 0 < row["rougeL"] < 1


def test_eval_qa_table_without_shared_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "Ann: The remote costs twelve euros.\nBob: We like yellow cases.\nAnn: The battery lasts a year."
    write_jsonl(tmp_path / "docs.jsonl", [{"id": "m", "text": text}])
    write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "id": "1",
                "question": "How long does the battery last?",
                "answers": ["a year"],
                "evidence": [{"doc": "m", "start": text.index("Ann: The battery"), "end": len(text)}],
            },
        ],
    )
    assert main(_qa_args(tmp_path, "--systems", "bm25")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 questions (1 with evidence) over 1 documents"
    assert out[2].split()[:5] == ["bm25", "1.0", "1.0", "1.0", "1.0"]


def test_eval_qa_document_at_1_counts_the_first_citation_s_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = "Cid: Lunch is at noon."
    decoy = "Ann: The battery battery battery lasts a year.\nBob: Battery life matters."
    write_jsonl(tmp_path / "docs.jsonl", [{"id": "decoy", "text": decoy}, {"id": "gold", "text": gold}])
    write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "id": "1",
                "question": "How long does the battery last?",
                "answers": ["a year"],
                "evidence": [{"doc": "gold", "start": 0, "end": len(gold)}],
            },
            {
                "id": "2",
                "question": "When is lunch?",
                "answers": ["noon"],
                "evidence": [{"doc": "gold", "start": 0, "end": len(gold)}],
            },
        ],
    )
    report = _json(
        capsys,
        _qa_args(tmp_path, "--systems", "bm25", "--json"),
    )
    assert report["systems"]["bm25"]["document@1"] == 0.5  # the battery question's best passage is the decoy
    assert report["systems"]["bm25"]["recall@1"] == 0.5


def test_eval_qa_scope_document_asks_a_question_over_its_own_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contracts = {
        "a": "The term of this agreement is five years. Either party may terminate on notice.",
        "b": "The term of this agreement is two years. Payment is due monthly.",
    }
    write_jsonl(tmp_path / "docs.jsonl", [{"id": k, "text": v} for k, v in contracts.items()])
    question = {"question": "What is the term of this agreement?", "evidence": []}
    write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "1", **question, "answers": ["five years"], "doc": "a"},
            {"id": "2", **question, "answers": ["two years"], "doc": "b"},
        ],
    )
    corpus = _json(capsys, _qa_args(tmp_path, "--systems", "bm25", "--json"))
    assert corpus["scope"] == "corpus" and corpus["systems"]["bm25"]["recall@1"] == 0.5  # one contract cited first
    own = _json(capsys, _qa_args(tmp_path, "--systems", "bm25", "--scope", "document", "--json"))
    assert own["scope"] == "document" and own["systems"]["bm25"]["recall@1"] == 1.0
    assert own["systems"]["bm25"]["document@1"] == 1.0


def test_eval_summarize_on_scisumm(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    papers = [next(convert_scisumm(shared_data / "scisumm"))]
    (tmp_path / "paper.txt").write_text(papers[0]["text"])
    papers.append({"id": "from-path", "path": "paper.txt", "reference": papers[0]["reference"]})
    write_jsonl(tmp_path / "s.jsonl", papers)
    report = _json(capsys, ["eval", "summarize", "--data", str(tmp_path / "s.jsonl"), "--limit", "2", "--json"])
    assert report["documents"] == 2
    for name in ("indexpool", "lead", "lexrank"):
        assert ROUGE_KEYS <= set(report["systems"][name])
        assert 0.1 < report["systems"][name]["rouge1"] < 0.9


def test_eval_summarize_cuts_the_abstract_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    abstract = (
        "We study how tidal pools recover after storms. Recovery took three weeks on average. "
        "Pools with more algae recovered faster than bare ones."
    )
    body = " ".join(f"Survey {i} counted {i + 3} crabs near the northern rocks of the bay." for i in range(12))
    (tmp_path / "paper.txt").write_text(f"Tidal pools after storms\n\n{abstract} {body}\n")
    rows = [
        {"id": "text", "text": f"{abstract} {body}", "reference": abstract},
        {"id": "path", "path": "paper.txt", "reference": abstract},
    ]
    scores = {}
    for row in rows:
        write_jsonl(tmp_path / "s.jsonl", [row])
        report = _json(
            capsys, ["eval", "summarize", "--data", str(tmp_path / "s.jsonl"), "--systems", "lead", "--json"]
        )
        scores[row["id"]] = report["systems"]["lead"]["rouge1"]
    assert scores["text"] == 1.0  # a text is summarized whole: LEAD copies the abstract
    assert scores["path"] < 0.5  # a file is cut as the batch command cuts it


def test_eval_niah_on_gutenberg(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _json(
        capsys,
        [
            "eval",
            "niah",
            "--haystack",
            str(shared_data / "gutenberg_nltk17" / "texts"),
            "--tokens",
            "4000",
            "--systems",
            "indexpool,bm25,dense",
            "--json",
        ],
    )
    assert set(report["accuracy"]) == {"single", "multikey"} and len(report["results"]) == 22  # the model's
    assert 3500 < report["haystack"]["4000"]["tokens"] <= 4000
    for name in ("bm25", "dense"):
        row = report["systems"][name]
        assert set(row["accuracy"]) == {"single", "multikey"}
        assert len(row["results"]) == 22
        assert set(row["results"][0]) == {"tokens", "depth", "variant", "hit"}
    assert report["systems"]["bm25"]["accuracy"]["single"] == 1.0


def test_eval_niah_table_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"Line {i} of a small book about rivers , hills and the weather ." for i in range(400)]
    (tmp_path / "book.txt").write_text("\n".join(lines))
    assert main(["eval", "niah", "--haystack", str(tmp_path), "--tokens", "2000", "--systems", "bm25"]) == 0
    out = capsys.readouterr().out
    assert "bm25: single 1.000, multikey " in out  # two distractors in one passage can outscore the asked needle
    assert main(["eval", "niah", "--haystack", str(tmp_path), "--tokens", "10000000", "--systems", "bm25"]) == 1
    assert "fewer than 10,000,000" in capsys.readouterr().err
    assert main(["eval", "qa", "--corpus", str(tmp_path / "missing.jsonl"), "--questions", "q.jsonl"]) == 1
    assert "missing.jsonl" in capsys.readouterr().err


def test_eval_qa_cache_variants(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped weights reading through other caches, and scoring by the read alone or without it, side by side."""
    systems = "indexpool-r1,indexpool-quest,indexpool-read,indexpool-noread"
    report = _qmsum_qa(shared_data, tmp_path, capsys, "--limit", "2", "--systems", systems)
    for name in systems.split(","):
        assert QA_KEYS <= set(report["systems"][name]), report["systems"][name]

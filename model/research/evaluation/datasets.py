"""Convert the shared development data into the documented evaluation inputs.

``python -m model.research.evaluation.datasets --data ../shared/data --out DIR`` writes:

- ``qmsum_{val,train}_docs.jsonl``: one document per meeting, ``text`` = its turns as ``Speaker: content`` lines.
- ``qmsum_{val,train}_questions.jsonl``: every query of the split. A specific query's evidence is the character
  span of each ``relevant_text_span`` (inclusive turn indices) in its meeting's text; a general query
  ("Summarize the whole meeting") has no turn spans, so its evidence is the whole meeting. Each line also
  carries ``"kind": "specific" | "general"``.
- ``qmsum_{val,train}_specific_questions.jsonl``: the specific queries only.
- ``scisumm_ge5000w.jsonl``: the papers of ``scisumm/ids_ge5000w.txt``; ``reference`` is the author abstract
  (``summary/<ID>.abstract.txt``) and ``text`` is the body, one XML sentence per line, sections separated by a
  blank line, with the abstract stripped (:func:`strip_abstract`). The abstract, not the ScisummNet human
  summary, is the reference: the human summary is built from the abstract plus citing sentences, and the
  acceptance rule "LEAD is the stronger baseline; the abstract must be stripped or LEAD copies the reference"
  only makes sense for the abstract.
- ``leval_{name}_docs.jsonl`` / ``leval_{name}_questions.jsonl`` for the L-Eval open-ended QA sets
  (``LEVAL_QA_SETS``: contracts, multi-document, Natural Questions, scientific papers): one document per record
  (its ``input``), one question per instruction with its output as the answer, ``"doc"`` naming its document and no
  evidence spans: ``eval qa`` counts a hit by the answer (``metrics.answer_in``).
- ``summaries_{name}.jsonl`` (``{"id", "text", "reference"}`` for ``eval summarize``), one summary set per domain:
  ``qmsum_val`` (each meeting and the answer of its general query, "Summarize the whole meeting"), and the L-Eval
  summary sets ``news_summ``, ``tv_show_summ`` and ``review_summ`` (each input and the reference of its first
  instruction, a summary of the whole input: L-Eval's other instructions ask about one aspect).
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ingest.abstract import strip_abstract


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write ``rows`` as JSON lines; returns the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (blank lines skipped)."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


# --- L-Eval ----------------------------------------------------------------------------------------------------

LEVAL_QA_SETS = ("legal_contract_qa", "multidoc_qa", "natural_question", "scientific_qa")


def convert_leval_qa(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The documents and questions of one L-Eval open-ended QA file (see the module docstring)."""
    name = path.stem
    documents, questions = [], []
    for i, record in enumerate(read_jsonl(path)):
        doc_id = f"{name}-{i}"
        documents.append({"id": doc_id, "text": record["input"]})  # L-Eval inputs have no titles
        pairs = zip(record["instructions"], record["outputs"], strict=True)
        for j, (question, answer) in enumerate(pairs):
            questions.append(
                {"id": f"{doc_id}-{j}", "question": question, "answers": [answer], "evidence": [], "doc": doc_id}
            )
    return documents, questions


LEVAL_SUMMARY_SETS = ("news_summ", "tv_show_summ", "review_summ")


def convert_leval_summaries(path: Path) -> list[dict[str, Any]]:
    """The inputs of one L-Eval summary file with the reference of their first instruction."""
    return [
        {"id": f"{path.stem}-{i}", "text": record["input"], "reference": record["outputs"][0]}
        for i, record in enumerate(read_jsonl(path))
    ]


def qmsum_summaries(documents: list[dict[str, Any]], questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each meeting with the answer of its (first) general query as the reference."""
    general = {}
    for q in questions:
        if q["kind"] == "general" and q["answers"]:
            general.setdefault(q["evidence"][0]["doc"], q["answers"][0])
    return [{"id": d["id"], "text": d["text"], "reference": general[d["id"]]} for d in documents if d["id"] in general]


# --- QMSum -----------------------------------------------------------------------------------------------------


def qmsum_meeting(meeting_id: str, meeting: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The document and the questions of one QMSum meeting JSON."""
    lines, turn_spans, offset = [], [], 0
    for turn in meeting["meeting_transcripts"]:
        line = f"{turn['speaker']}: {turn['content']}"
        lines.append(line)
        turn_spans.append((offset, offset + len(line)))
        offset += len(line) + 1
    text = "\n".join(lines)
    questions = []
    for kind in ("specific", "general"):
        for n, query in enumerate(meeting[f"{kind}_query_list"]):
            if kind == "specific":
                evidence = [
                    {"doc": meeting_id, "start": turn_spans[int(a)][0], "end": turn_spans[int(b)][1]}
                    for a, b in query["relevant_text_span"]
                ]
            else:
                evidence = [{"doc": meeting_id, "start": 0, "end": len(text)}]
            questions.append(
                {
                    "id": f"{meeting_id}/{kind}/{n}",
                    "question": query["query"],
                    "answers": [query["answer"]],
                    "evidence": evidence,
                    "kind": kind,
                }
            )
    return {"id": meeting_id, "text": text, "title": meeting_id}, questions


def convert_qmsum(split_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Documents and questions of every meeting in a QMSum split folder, in file-name order."""
    documents, questions = [], []
    for path in sorted(split_dir.glob("*.json")):
        document, qs = qmsum_meeting(path.stem, json.loads(path.read_text(encoding="utf-8")))
        documents.append(document)
        questions.extend(qs)
    return documents, questions


# --- ScisummNet ------------------------------------------------------------------------------------------------


def _clean(text: str) -> str:
    return " ".join(html.unescape(text).split())


def scisumm_paper(paper_dir: Path) -> dict[str, Any]:
    """One ScisummNet paper as a summarization item (see the module docstring)."""
    paper_id = paper_dir.name
    root = ET.parse(paper_dir / "Reference_XML" / f"{paper_id}.xml").getroot()
    children = list(root)
    title = _clean("".join(children[0].itertext())) if children and children[0].tag == "S" else paper_id
    blocks: list[list[str]] = []  # sentences of each <ABSTRACT>/<SECTION>, or of a run of top-level <S>
    for n, element in enumerate(children):
        if element.tag == "S" and n == 0:
            continue
        sentences = [_clean("".join(s.itertext())) for s in element.iter("S")]
        if element.tag == "S" and n > 1 and children[n - 1].tag == "S":
            blocks[-1].extend(sentences)
        else:
            blocks.append(sentences)
    sentences = [s for block in blocks for s in block]
    abstract = (paper_dir / "summary" / f"{paper_id}.abstract.txt").read_text(encoding="utf-8")
    cut, coverage = strip_abstract(sentences, abstract)
    dropped = set(cut)
    body, i = [], 0
    for block in blocks:
        kept = [s for j, s in enumerate(block, i) if j not in dropped and s]
        i += len(block)
        if kept:
            body.append("\n".join(kept))
    reference = "\n".join(line.strip() for line in abstract.splitlines() if line.strip())
    return {
        "id": paper_id,
        "title": title,
        "text": "\n\n".join(body),
        "reference": reference,
        "abstract_sentences_cut": len(cut),
        "abstract_coverage_cut": round(coverage, 3),
    }


def convert_scisumm(scisumm_dir: Path, ids_file: str = "ids_ge5000w.txt") -> Iterator[dict[str, Any]]:
    """The papers listed in ``ids_file``, in its order."""
    for paper_id in (scisumm_dir / ids_file).read_text().split():
        yield scisumm_paper(scisumm_dir / "papers" / paper_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the shared data folder")
    parser.add_argument("--out", type=Path, required=True, help="output folder for the JSONL files")
    args = parser.parse_args(argv)
    for split in ("val", "train"):
        documents, questions = convert_qmsum(args.data / "qmsum" / split)
        n_docs = write_jsonl(args.out / f"qmsum_{split}_docs.jsonl", documents)
        n_all = write_jsonl(args.out / f"qmsum_{split}_questions.jsonl", questions)
        n_specific = write_jsonl(
            args.out / f"qmsum_{split}_specific_questions.jsonl", (q for q in questions if q["kind"] == "specific")
        )
        print(f"qmsum {split}: {n_docs} meetings, {n_all} questions ({n_specific} specific)")
        if split == "val":
            n = write_jsonl(args.out / "summaries_qmsum_val.jsonl", qmsum_summaries(documents, questions))
            print(f"qmsum val summaries: {n} meetings with a general query")
    for name in LEVAL_QA_SETS:
        documents, questions = convert_leval_qa(args.data / "leval" / "Open-ended-tasks" / f"{name}.jsonl")
        write_jsonl(args.out / f"leval_{name}_docs.jsonl", documents)
        write_jsonl(args.out / f"leval_{name}_questions.jsonl", questions)
        print(f"leval {name}: {len(documents)} documents, {len(questions)} questions")
    for name in LEVAL_SUMMARY_SETS:
        items = convert_leval_summaries(args.data / "leval" / "Open-ended-tasks" / f"{name}.jsonl")
        print(f"leval {name}: {write_jsonl(args.out / f'summaries_{name}.jsonl', items)} inputs to summarize")
    papers = list(convert_scisumm(args.data / "scisumm"))
    write_jsonl(args.out / "scisumm_ge5000w.jsonl", papers)
    cut = sum(p["abstract_sentences_cut"] > 0 for p in papers)
    weak = [p["id"] for p in papers if p["abstract_coverage_cut"] < 0.5]
    print(
        f"scisumm: {len(papers)} papers; abstract copy cut from {cut} "
        f"(under half of the abstract found in: {', '.join(weak) or 'none'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

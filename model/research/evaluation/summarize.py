"""``eval summarize``: ROUGE-1/2/L/Lsum (rouge-score, stemming) of each summarizer at the same length budget.

Input (JSONL): ``{"id", "text" | "path", "reference"}``. A ``text`` is summarized whole, split into sentences as the
library splits it. A relative ``path`` (PDF, text, HTML) is resolved against the JSONL file's folder, read with the
project's ingestion and cut as the batch command cuts it (``app.services.summaries.body_of``): the abstract and what
precedes it, keywords, references, and the document's copy of the reference when it carries one (a paper's abstract
is often untagged at the start of its first section), so no system can copy the reference. Every system gets the
same budget: the reference's word count, or ``budget_words`` when given. A summarizer chooses whole sentences; the
summary is cut to the budget before scoring, so every system is scored at one length.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.inference.passages import DocumentText
from model.inference.summarizers import Summarizer
from model.research.evaluation.baselines import fit_budget
from model.research.evaluation.datasets import read_jsonl
from model.research.evaluation.metrics import ROUGE_TYPES, rouge
from model.research.evaluation.passages import document_text
from model.research.evaluation.systems import available, make_eval_summarizer


@dataclass(frozen=True)
class Item:
    id: str
    document: DocumentText  # what the summarizers read
    reference: str


def read_body(path: Path, reference: str) -> DocumentText:
    """The body of a file as the batch command summarizes it (see the module docstring); raises ValueError when it
    cannot be read or has no body."""
    from app.services.summaries import abstract_copy, body_of
    from ingest.document import IngestError
    from ingest.pipeline import parse_item
    from ingest.sources import Limits, expand_inputs

    for item in expand_inputs([path], Limits()):
        for result in [item] if isinstance(item, IngestError) else parse_item(item):
            if isinstance(result, IngestError):
                raise ValueError(str(result))
            body, _ = body_of(result, abstract_copy(result, reference))
            if not len(body.sentences):
                raise ValueError(f"{path}: no text to summarize outside the abstract and references")
            return body.document
    raise ValueError(f"{path}: no document found")


def load_items(path: Path, limit: int | None = None) -> list[Item]:
    items = []
    for row in read_jsonl(path)[:limit]:
        doc, reference = str(row["id"]), row["reference"]
        if "text" in row:
            document = document_text(doc, row["text"])
        else:
            document = read_body(path.parent / row["path"], reference)
        items.append(Item(doc, document, reference))
    return items


def _lines(text: str) -> str:
    """One sentence per line, as ROUGE-Lsum expects (the reference's own line breaks are kept)."""
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def evaluate_summarizer(system: Summarizer, items: Sequence[Item], budget_words: int | None) -> dict[str, float]:
    """Mean ROUGE F-measures of ``system`` over ``items``."""
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    started = time.perf_counter()
    for item in items:
        budget = budget_words or len(item.reference.split())
        chosen = system.choose(item.document, budget)
        summary = fit_budget([" ".join(item.document.sentence_text(i).split()) for i in chosen], budget)
        for name, value in rouge(summary, [_lines(item.reference)]).items():
            totals[name] += value
    result = {name: total / len(items) if items else float("nan") for name, total in totals.items()}
    result["seconds"] = time.perf_counter() - started
    return result


def run_summarize(
    data: Path,
    systems: Sequence[str],
    limit: int | None = None,
    budget_words: int | None = None,
    summary_policy: str = "",
) -> dict[str, Any]:
    """The ``eval summarize --json`` object; ``summary_policy`` overrides the IndexPool summarizer's policy."""
    items = load_items(data, limit)
    report: dict[str, Any] = {
        "documents": len(items),
        "budget_words": budget_words or "reference length",
        "systems": {},
    }
    for name, system in available(systems, lambda name: make_eval_summarizer(name, summary_policy), report):
        print(f"eval summarize: {name} on {len(items)} documents", file=sys.stderr, flush=True)
        report["systems"][name] = evaluate_summarizer(system, items, budget_words)
    return report

"""The demo's example questions have known answers: the modules the model cites for them, over the whole sample."""

from __future__ import annotations

from pathlib import Path

from app.cli import index_collection
from app.services import Services
from app.services.sample import SAMPLE_QUESTIONS, answers_from, build_sample, sample_module


def test_the_model_cites_the_module_that_answers_the_demo_questions(tmp_path: Path) -> None:
    """A question counts when one of the three citations `indexpool demo` prints is in a module that answers it.
    (The first citation alone: 8 of the demo's 10, 18 of 20 on 2026-12-06; BENCHMARKS.md.)"""
    services = Services(tmp_path)
    report = build_sample(services)
    index_collection(services, report["collection"], quiet=True)
    right, cited = [], []
    for question, modules in SAMPLE_QUESTIONS:
        answer = services.ask.ask([report["collection"]], question, top_k=3, reader="indexpool")
        found = [sample_module(c.source) for c in answer.citations]
        right.append(any(answers_from(m, modules) for m in found))
        cited.append((question, found))
        if len(cited) <= 10:  # printed by the demo: whole sentences, not fragments of a table of members
            first = answer.citations[0].text
            assert len(first.split()) >= 4 and "\n |" not in first and answer.confident, (question, first)
    assert sum(right[:10]) >= 8, cited
    assert sum(right) >= 16, cited

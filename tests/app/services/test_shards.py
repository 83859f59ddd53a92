"""Shards: two gloo ranks on this machine answer as one process does, over the shipped checkpoint and the embedded
sample; a rank that dies mid-question or stalls gives a clear error within 30 s, and the group says it is closed."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import pydoc
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.services import Services, UserError
from app.services.shards import ShardError, ShardGroup, assign
from ingest.stdlib_docs import clean_doc
from model.inference.qa import Question, cited
from model.network.checkpoint import load_model
from model.network.paths import indexpool_checkpoint

pytestmark = pytest.mark.skipif(not indexpool_checkpoint().is_file(), reason="the shipped checkpoint is not installed")

MODULES = ("csv", "threading", "json", "zipfile", "sched", "gzip", "base64", "shutil")
QUESTIONS = [
    "How do I read a CSV file with a header row into dictionaries?",
    "How can I run a function after a delay in another thread?",
    "What does zip do with strict=True?",
    "How do I parse a JSON document?",
    "What does the Borealis module do?",  # nothing answers it: not confident
    "What does the Shutil documentation say about copying trees?",  # names a document, of one rank
    "What does the Gzip module say about compression levels?",
    "How many bytes does a UTF-8 character take?",  # a count of a subject: decided over every rank
]


def test_documents_go_to_the_lightest_rank_and_stay() -> None:
    sizes = [(1, 500), (2, 100), (3, 100), (4, 100), (5, 1000)]
    assert assign(sizes, 2) == {1: 0, 2: 1, 3: 1, 4: 1, 5: 1}
    assert assign([*sizes, (6, 10)], 2) == {1: 0, 2: 1, 3: 1, 4: 1, 5: 1, 6: 0}  # the new one alone moves in
    assert assign(sizes, 3) == {1: 0, 2: 1, 3: 2, 4: 1, 5: 2}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pydoc text of eight stdlib modules (the embedded sample's kind) as "stdlib", and csv's alone as "one"
    (then one rank holds none of a question's documents)."""
    home, docs = tmp_path_factory.mktemp("shards"), tmp_path_factory.mktemp("modules")
    for name in MODULES:
        module = importlib.import_module(name)
        (docs / f"{name}.txt").write_text(clean_doc(pydoc.render_doc(module, renderer=pydoc.plaintext)))
    services = Services(home)
    assert not [e for e in services.ingest.ingest([docs], "stdlib") if e.status == "error"]
    assert not [e for e in services.ingest.ingest([docs / "csv.txt"], "one") if e.status == "error"]
    services.indexes.build([d for d, _, _ in services.ask.library.ingested_documents()])
    return home


def _cited(answer: dict[str, Any]) -> list[tuple[int, int, int, float]]:
    return [(c["doc"], c["start"], c["end"], c["score"]) for c in answer["citations"]]


@pytest.fixture
def group(library: Path) -> Iterator[tuple[Services, ShardGroup]]:
    services = Services(library)
    group = ShardGroup.spawn(services.ask.library, services.indexes, 2, timeout_s=5)
    try:
        yield services, group
    finally:
        group.close()


def test_two_ranks_answer_as_one_process(library: Path, group: tuple[Services, ShardGroup]) -> None:
    alone = Services(library)
    expected = {(c, q): alone.ask.ask([c], q, top_k=5).to_json() for q in QUESTIONS for c in ("stdlib", "one")}
    services, shards = group
    plan = assign(services.ask.library.document_sizes(), 2)
    assert set(plan.values()) == {0, 1}  # both ranks hold documents
    services.ask.use_shards(shards)
    for (collection, question), want in expected.items():
        got = services.ask.ask([collection], question, top_k=5).to_json()
        assert _cited(got) == _cited(want), (collection, question)
        assert (got["answer"], got["confident"]) == (want["answer"], want["confident"])
        assert got["read"]["shards"] == 2 and got["read"]["tokens"] == want["read"]["tokens"]
        assert list(got["timings_ms"]) == ["load", "shards", "score", "total"]
    assert not expected[("stdlib", QUESTIONS[4])]["confident"] and expected[("one", QUESTIONS[0])]["confident"]
    shutil = expected[("stdlib", QUESTIONS[5])]["citations"]
    assert [c["source"].endswith("shutil.txt") for c in shutil[:2]] == [True, True]  # the named document's first


def test_the_merge_asks_the_ranks_for_more_as_it_reads_on(library: Path, group: tuple[Services, ShardGroup]) -> None:
    """Two candidates per rank and round, thirty read: the merged stream is the single process's ranking."""
    services, shards = group
    model = load_model()
    entries = [("stdlib", d.id, d.content_hash) for d in services.ask.library.documents("stdlib", "")]
    index = Services(library).indexes.index(model, entries)
    plan, seen = assign(services.ask.library.document_sizes(), 2), set()
    for question in QUESTIONS[:3]:  # the first names a document (csv's passages first), the others none
        ranked = cited(model, index, Question.encode(model, question, index))
        want = [(c.document_id, c.sentence_number, round(c.score, 4)) for c in itertools.islice(ranked, 30)]
        with shards.question(model, question, entries, "", top_k=2) as (stream, _, _):
            got = [(c.document_id, c.sentence_number, round(c.score, 4)) for c in itertools.islice(stream, 30)]
        assert got == want, question
        seen |= {plan[int(d)] for d, _, _ in got}
    assert seen == {0, 1}  # both ranks' candidates were merged


def _ask_in_thread(services: Services, outcome: dict[str, Any]) -> threading.Thread:
    def ask() -> None:
        started = time.monotonic()
        try:
            services.ask.ask(["stdlib"], QUESTIONS[0], top_k=5)
            outcome["error"] = None
        except UserError as error:
            outcome["error"] = error
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def test_a_rank_killed_mid_question_gives_a_clear_error(group: tuple[Services, ShardGroup]) -> None:
    services, shards = group
    services.ask.use_shards(shards)
    services.ask.ask(["stdlib"], QUESTIONS[1], top_k=5)  # the ranks are up and have loaded their documents
    outcome: dict[str, Any] = {}
    thread = _ask_in_thread(services, outcome)
    deadline = time.monotonic() + 60
    while not shards.store.check(["ready/2/1"]):  # rank 1 has loaded its part of the question: it is under way
        assert time.monotonic() < deadline
        time.sleep(0.005)
    killed = time.monotonic()
    shards.processes[0].kill()
    thread.join(60)
    assert not thread.is_alive() and time.monotonic() - killed <= 30
    error = outcome["error"]
    assert isinstance(error, ShardError) and "rank 1" in str(error) and "exited" in str(error), error
    with pytest.raises(ShardError, match="closed .*restart"):  # every later question says so, at once
        services.ask.ask(["stdlib"], QUESTIONS[2], top_k=5)


def test_a_stalled_rank_gives_a_clear_error(group: tuple[Services, ShardGroup]) -> None:
    services, shards = group
    services.ask.use_shards(shards)
    services.ask.ask(["stdlib"], QUESTIONS[1], top_k=5)
    os.kill(shards.processes[0].pid, signal.SIGSTOP)
    try:
        outcome: dict[str, Any] = {}
        _ask_in_thread(services, outcome).join(60)
        assert outcome["seconds"] <= 30
        assert isinstance(outcome["error"], ShardError) and "rank 1 stopped answering" in str(outcome["error"])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(shards.processes[0].pid, signal.SIGCONT)

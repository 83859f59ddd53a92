"""The interfaces every evaluated system implements, and the registry the tasks pick systems from.

A ``QASystem`` indexes a corpus once and then answers questions with ranked citations (character spans of
passages of at most ~200 words) and an extractive answer. A ``Summarizer`` writes a summary of at most a given
number of words, one sentence per line. The baselines live in :mod:`model.evaluation.baselines`.

The IndexPool model plugs in as the system ``indexpool``: when its checkpoint exists, the module
``model.system`` (shipped with the model) must provide ``qa_system(checkpoint: Path) -> QASystem`` and
``summarizer(checkpoint: Path) -> Summarizer``. Until then the system is reported as unavailable, with the
reason, and never replaced by anything else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from model.checkpoint import indexpool_checkpoint
from model.evaluation.metrics import Span

QA_SYSTEMS = ("indexpool", "bm25", "dense")
# also accepted by --systems: the model with another indexer cache (model.system.CACHE_VARIANTS)
QA_VARIANTS = ("indexpool-int8", "indexpool-uncompressed")
SUMMARIZERS = ("indexpool", "lead", "lexrank")


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class Response:
    """Citations best first (each at most ~200 words) and the extractive answer text."""

    citations: list[Span]
    answer: str


class QASystem(Protocol):
    name: str

    def index(self, documents: Sequence[Document]) -> None:
        """Prepare for questions over ``documents`` (replacing any previous corpus)."""

    def ask(self, question: str, k: int) -> Response:
        """Answer ``question`` with up to ``k`` citations, best first."""


class Summarizer(Protocol):
    name: str

    def summarize(self, text: str, budget_words: int) -> str:
        """A summary of ``text`` of at most ``budget_words`` words, one sentence per line."""


class SystemUnavailable(Exception):
    """The system cannot run here; the message says why."""


def _indexpool(factory: str, checkpoint: Path, *args: str) -> object:
    if not checkpoint.is_file():
        raise SystemUnavailable(f"no IndexPool checkpoint at {checkpoint} (the model has not been trained yet)")
    try:
        module = importlib.import_module("model.system")
    except ImportError as error:
        raise SystemUnavailable(f"the IndexPool inference module model.system cannot be imported: {error}") from error
    return getattr(module, factory)(checkpoint, *args)


def make_qa_system(name: str, checkpoint: Path | None = None) -> QASystem:
    """The QA system called ``name`` (the model from ``checkpoint``, by default ``indexpool_checkpoint()``); raises
    SystemUnavailable, or ValueError for an unknown name."""
    from model.evaluation import baselines

    checkpoint = checkpoint or indexpool_checkpoint()
    if name == "indexpool":
        return _indexpool("qa_system", checkpoint)  # type: ignore[return-value]
    if name in QA_VARIANTS:
        return _indexpool("qa_system", checkpoint, name.removeprefix("indexpool-"))  # type: ignore[return-value]
    if name == "bm25":
        return baselines.BM25System()
    if name == "dense":
        return baselines.DenseSystem()
    raise ValueError(f"unknown QA system {name!r} (choose from {', '.join(QA_SYSTEMS + QA_VARIANTS)})")


def make_summarizer(name: str, checkpoint: Path | None = None) -> Summarizer:
    """The summarizer called ``name`` (the model from ``checkpoint``, by default ``indexpool_checkpoint()``); raises
    SystemUnavailable, or ValueError for an unknown name."""
    from model.evaluation import baselines

    checkpoint = checkpoint or indexpool_checkpoint()
    if name == "indexpool":
        return _indexpool("summarizer", checkpoint)  # type: ignore[return-value]
    if name == "lead":
        return baselines.Lead()
    if name == "lexrank":
        return baselines.LexRank()
    raise ValueError(f"unknown summarizer {name!r} (choose from {', '.join(SUMMARIZERS)})")


System = TypeVar("System")


def available(
    names: Sequence[str], make: Callable[[str], System], report: dict[str, Any]
) -> Iterator[tuple[str, System]]:
    """Yield ``(name, system)`` for each system that can run here; each one that cannot is recorded in
    ``report["systems"][name]`` as ``{"unavailable": reason}``."""
    for name in names:
        try:
            system = make(name)
        except SystemUnavailable as error:
            report["systems"][name] = {"unavailable": str(error)}
            continue
        yield name, system

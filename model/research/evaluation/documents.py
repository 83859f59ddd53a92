"""What the evaluated QA systems read and return: documents, responses, and the ``QASystem`` interface."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from model.research.evaluation.metrics import Span


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

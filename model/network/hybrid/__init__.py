"""The IndexPool hybrid model: gated linear attention + IndexPool sparse attention, fused per head."""

from .config import HybridConfig
from .heads import (
    AnswerHead,
    EvidenceHead,
    SalienceHead,
    SpanAccumulator,
    TokenMatchHead,
    best_sentences,
    best_span,
    span_means,
)
from .model import CollectionState, HybridModel, QueryOutput

__all__ = [
    "AnswerHead",
    "CollectionState",
    "EvidenceHead",
    "HybridConfig",
    "HybridModel",
    "QueryOutput",
    "SalienceHead",
    "SpanAccumulator",
    "TokenMatchHead",
    "best_sentences",
    "best_span",
    "span_means",
]

"""The IndexPool hybrid model: gated linear attention + IndexPool sparse attention, fused per head."""

from .config import HybridConfig
from .heads import EvidenceHead, SalienceHead, SpanAccumulator, TokenMatchHead, span_means
from .model import CollectionState, HybridModel, ReadOutput
from .question_read import CollectionLayer, DenseLayer, LayerRead, QuestionQueries

__all__ = [
    "CollectionLayer",
    "CollectionState",
    "DenseLayer",
    "EvidenceHead",
    "HybridConfig",
    "HybridModel",
    "LayerRead",
    "QuestionQueries",
    "ReadOutput",
    "SalienceHead",
    "SpanAccumulator",
    "TokenMatchHead",
    "span_means",
]

"""The IndexPool hybrid model: gated linear attention + IndexPool sparse attention, fused per head."""

from .config import HybridConfig
from .heads import EvidenceHead, SalienceHead, SpanAccumulator, TokenMatchHead, span_means
from .model import CollectionState, HybridModel, QueryOutput

__all__ = [
    "CollectionState",
    "EvidenceHead",
    "HybridConfig",
    "HybridModel",
    "QueryOutput",
    "SalienceHead",
    "SpanAccumulator",
    "TokenMatchHead",
    "span_means",
]

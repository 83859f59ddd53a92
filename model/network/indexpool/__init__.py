"""IndexPool: a pooled (optionally INT8) indexer key cache for sparse attention, with a tiered key/value cache."""

from .cache import KVTiers, TierStats
from .config import PRESETS, IndexPoolConfig
from .indexer import IndexPoolIndexer, Selection
from .monitor import CallRecord
from .pooling import MeanPoolingWeights, PoolingWeights, StaticPoolingWeights
from .quant import fake_quant, hadamard

__all__ = [
    "CallRecord",
    "IndexPoolConfig",
    "IndexPoolIndexer",
    "MeanPoolingWeights",
    "PRESETS",
    "PoolingWeights",
    "Selection",
    "StaticPoolingWeights",
    "KVTiers",
    "TierStats",
    "fake_quant",
    "hadamard",
]

"""IndexPool: a pooled (optionally INT8) indexer key cache for sparse attention, with a tiered block cache."""

from .cache import TieredCache
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
    "TieredCache",
    "fake_quant",
    "hadamard",
]

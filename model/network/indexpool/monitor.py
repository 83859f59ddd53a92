"""Per-call monitoring record of the IndexPool indexer (feeds the dashboard)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class CallRecord:
    pooling_ms: float = 0.0  # writing pooled keys during the last append
    scoring_ms: float = 0.0  # fused scoring + running top-k over tier 1
    topk_ms: float = 0.0  # final selection: entries → token ranges, sink and local window added
    tier1_bytes: int = 0  # indexer cache (pooled keys, codes + scales)
    weight_entropy: float = 1.0  # mean pooling-weight entropy / log r (1 = uniform)
    average_ratio: float = 1.0  # tokens per tier-1 entry

    def as_dict(self) -> dict:
        return asdict(self)

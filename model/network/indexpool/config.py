"""IndexPool configuration: one dataclass, loadable from JSON, with named presets."""

from __future__ import annotations

from dataclasses import dataclass, replace

from model.jsonconfig import JsonConfig

METHODS = ("uncompressed", "indexpool", "mean_pool", "static", "quest")
CONTENT_QUERIES = ("last_query", "block_mean")


@dataclass
class IndexPoolConfig(JsonConfig):
    n_heads: int = 8  # H_I indexer heads
    head_dim: int = 64  # d_I
    ratio: int = 4  # r keys per pooled entry (2, 4 or 8)
    alpha: float = 0.5  # positional weight
    beta: float = 0.3  # content weight
    gamma: float = 0.2  # temporal weight
    sigma: float = 1.5  # positional Gaussian width, in tokens
    decay: float = 0.5  # temporal decay rate per token of age inside the block
    content_query: str = "last_query"  # "last_query" or "block_mean" (see pooling.py)
    min_length: int = 10_000  # below this many tokens compression is off
    adaptive: bool = False  # keep r = 1 for blocks whose keys disagree
    adaptive_threshold: float = 0.5  # disagreement = 1 - mean cosine(key, block mean) above which r = 1
    int8: bool = False  # INT8 pooled keys with per-row scales
    hadamard: bool = True  # rotate before INT8 quantization
    quest_block: int = 8  # Quest baseline block (min + max = same bytes as 4:1)
    sink_tokens: int = 64  # always selected: the first tokens
    local_tokens: int = 256  # always selected: the most recent tokens

    def __post_init__(self) -> None:
        if self.ratio not in (1, 2, 4, 8):
            raise ValueError(f"ratio must be 1, 2, 4 or 8, got {self.ratio}")
        if self.content_query not in CONTENT_QUERIES:
            raise ValueError(f"content_query must be one of {CONTENT_QUERIES}, got {self.content_query!r}")
        align = max(self.ratio, self.quest_block)
        if self.sink_tokens % align or self.local_tokens % align:
            raise ValueError(f"sink_tokens and local_tokens must be multiples of {align} (ratio, quest block)")

    @classmethod
    def preset(cls, name: str, **overrides) -> IndexPoolConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; expected one of {sorted(PRESETS)}")
        return replace(cls(**PRESETS[name]), **overrides)


PRESETS: dict[str, dict] = {
    "default": {},
    # more content weight; blocks whose keys disagree (code, tables, formulas) stay unpooled
    "technical": {"alpha": 0.3, "beta": 0.55, "gamma": 0.15, "adaptive": True},
    "news": {"alpha": 0.35, "beta": 0.25, "gamma": 0.4, "decay": 1.0},  # more temporal decay
}

"""HybridConfig: the sizes of the IndexPool hybrid model, loadable from and savable to JSON.

Every field takes part in ``model_version``, a short hash of the config: caches built by one version are refused by
another. ``weights_id`` is free text the training code sets (e.g. a checkpoint hash) so that two checkpoints of the
same shape also get different versions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from model.jsonconfig import JsonConfig
from model.network.indexpool import PRESETS, IndexPoolConfig
from model.network.indexpool.config import METHODS

CACHE_DTYPES = ("float32", "float16", "bfloat16")


@dataclass
class HybridConfig(JsonConfig):
    # tokens and widths
    vocab_size: int = 16000  # sentencepiece vocabulary (model/tokenizer.py)
    pad_id: int = 3
    d_model: int = 256
    embed_dim: int | None = None  # token-embedding width; None = d_model, else a projection embed_dim → d_model
    n_layers: int = 2
    n_heads: int = 4  # heads of both streams and of the fusion gate
    head_dim: int = 64
    n_kv_heads: int = 1  # sparse-stream key/value heads (grouped queries); the cached K/V are per kv head
    mlp_ratio: float = 8 / 3  # SwiGLU hidden = round(mlp_ratio · d_model)
    dropout: float = 0.0
    norm_eps: float = 1e-6
    # linear-attention stream (gated linear attention)
    gla_chunk: int = 64  # chunk of the chunkwise-parallel form
    gla_gate_rank: int = 16  # low-rank dim of the data-dependent decay gate
    gla_gate_normalizer: float = 16.0  # log-decay = logsigmoid(·) / normalizer (GLA)
    gla_min_log_decay: float = -1.0  # floor of the per-step log-decay; gla_chunk · |floor| ≤ 80 keeps exp() finite
    # sparse stream: IndexPool indexer + exact attention over selected tokens
    indexer_heads: int = 4  # H_I
    indexer_dim: int = 32  # d_I (a power of two: Hadamard rotation before INT8)
    indexer_key_window: int = 256  # each indexer key is the mean of the last W token keys (causal; 1 = token keys)
    query_block: int = 128  # prefill: the tokens of one query block share one top-k selection
    topk_tokens: int = 512  # question tokens: scored tokens selected per token (-1 = all)
    prefill_topk_tokens: int = 128  # collection tokens: scored tokens selected per query block (-1 = all)
    local_window: int = 128  # tokens before the query block (or the question) always attended (multiple of 8)
    sink_tokens: int = 64  # first tokens always attended (multiple of 8)
    pool_ratio: int = 4  # r
    pool_method: str = "indexpool"  # one of model.network.indexpool METHODS ("uncompressed" = the r = 1 reference)
    pool_preset: str = "default"  # IndexPool preset: initial α, β, γ, σ, λ
    int8_cache: bool = False  # INT8 pooled indexer keys (+ Hadamard)
    cache_dtype: str = "float16"  # storage of the cached sparse-stream keys/values (used everywhere, also training)
    weights_id: str = ""  # set by training: distinguishes checkpoints of the same shape

    def __post_init__(self) -> None:
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        if self.gla_chunk * abs(self.gla_min_log_decay) > 80:
            raise ValueError("gla_chunk · |gla_min_log_decay| must be ≤ 80 (the chunkwise form would overflow)")
        align = max(self.pool_ratio, IndexPoolConfig.quest_block)  # entry boundaries: no gap before the window
        if self.query_block % align:
            raise ValueError(f"query_block must be a multiple of {align} (pool ratio, Quest block)")
        if self.pool_method not in METHODS:
            raise ValueError(f"pool_method must be one of {METHODS}, got {self.pool_method!r}")
        if self.pool_preset not in PRESETS:
            raise ValueError(f"pool_preset must be one of {sorted(PRESETS)}, got {self.pool_preset!r}")
        if self.cache_dtype not in CACHE_DTYPES:
            raise ValueError(f"cache_dtype must be one of {CACHE_DTYPES}, got {self.cache_dtype!r}")
        if self.indexer_key_window < 1:
            raise ValueError(f"indexer_key_window must be ≥ 1, got {self.indexer_key_window}")
        self.indexpool_config()  # validates the indexer settings

    @property
    def mlp_hidden(self) -> int:
        return int(round(self.mlp_ratio * self.d_model))

    def indexpool_config(self) -> IndexPoolConfig:
        """The IndexPool settings of every layer's indexer. Compression is always on (min_length 0), so the
        model sees the same pooled cache in training, on short inputs and on 1M-token collections."""
        return IndexPoolConfig.preset(
            self.pool_preset,
            n_heads=self.indexer_heads,
            head_dim=self.indexer_dim,
            ratio=self.pool_ratio,
            int8=self.int8_cache,
            min_length=0,
            sink_tokens=self.sink_tokens,
            local_tokens=self.local_window,
        )

    @property
    def model_version(self) -> str:
        """Short hash of every field: caches are keyed by it."""
        text = json.dumps(asdict(self), sort_keys=True)
        return "hybrid-" + hashlib.sha256(text.encode()).hexdigest()[:12]

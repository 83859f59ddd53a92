"""HybridModel: token embeddings → HybridBlocks → final RMSNorm.

    model = HybridModel(HybridConfig())
    h = model(ids)                                   # (B, T, d) training on short sequences (right padding is fine)
    state = model.prefill(token_stream, chunk_tokens=4096, on_chunk=fn)   # a collection, streamed
    out = model.read(question_ids, layers)           # a question reading a stored collection (question_read.py)

Prefill keeps per layer: the linear-attention state (constant size), the sparse stream's keys/values, and the IndexPool
indexer (pooled indexer keys). Working memory beyond those caches is bounded by ``chunk_tokens``; final token states
are handed to ``on_chunk(start, hidden (T, d))`` and not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .block import HybridBlock
from .config import HybridConfig
from .question_read import CollectionLayer, DenseLayer, LayerRead
from .sparse_attention import SparseCache


@dataclass
class CollectionState:
    """The encoded collection: everything a question needs, nothing that grows beyond the caches."""

    model_version: str
    length: int = 0  # tokens encoded
    gla: list[torch.Tensor | None] = field(default_factory=list)  # per layer (1, H, Dk, Dv)
    sparse: list[SparseCache] = field(default_factory=list)  # per layer


@dataclass
class ReadOutput:
    hidden: torch.Tensor  # (Tq, d) final question states
    layers: list[LayerRead]  # per layer: the collection tokens read and the attention mass each received


def _chunks(tokens: torch.Tensor | np.ndarray | Iterable, size: int) -> Iterator[torch.Tensor]:
    """A 1-D token tensor/array or an iterable of 1-D pieces of any sizes → 1-D int64 chunks of ``size`` tokens."""
    if isinstance(tokens, torch.Tensor | np.ndarray):
        tokens = [tokens]
    buf: list[torch.Tensor] = []
    n = 0
    for piece in tokens:
        buf.append(torch.as_tensor(piece, dtype=torch.int64).reshape(-1))
        n += buf[-1].numel()
        while n >= size:
            flat = torch.cat(buf)
            yield flat[:size]
            buf, n = [flat[size:]], n - size
    if n:
        yield torch.cat(buf)


class HybridModel(nn.Module):
    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.cfg = cfg
        width = cfg.embed_dim or cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, width)
        self.embed_proj = nn.Linear(width, cfg.d_model, bias=False) if width != cfg.d_model else None
        self.blocks = nn.ModuleList(HybridBlock(cfg, i) for i in range(cfg.n_layers))
        self.norm = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.stats: dict[str, float] = {}  # gate mean/std per layer of the last call
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    @property
    def model_version(self) -> str:
        return self.cfg.model_version

    def load_token_embeddings(self, matrix: torch.Tensor | np.ndarray) -> None:
        """Use a static embedding matrix (vocab_size, e); e ≠ d_model adds a learned projection e → d_model.
        Sets cfg.embed_dim, so the config (and model_version) records the width."""
        matrix = torch.as_tensor(np.asarray(matrix), dtype=torch.float32)
        if matrix.shape[0] != self.cfg.vocab_size:
            raise ValueError(f"embedding matrix has {matrix.shape[0]} rows, the vocabulary {self.cfg.vocab_size}")
        width = matrix.shape[1]
        self.cfg.embed_dim = None if width == self.cfg.d_model else width
        self.embed = nn.Embedding.from_pretrained(matrix.clone(), freeze=False)
        self.embed_proj = None
        if width != self.cfg.d_model:
            self.embed_proj = nn.Linear(width, self.cfg.d_model, bias=False)
            self._init(self.embed_proj)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, T) → (B, T, d)"""
        x = self.embed(ids)
        return x if self.embed_proj is None else self.embed_proj(x)

    def new_state(self, record: bool = False) -> CollectionState:
        """An empty stream; with ``record`` its caches keep what a question's read needs (``SparseCache``)."""
        caches = [SparseCache(b.sparse, record) for b in self.blocks]
        return CollectionState(self.model_version, 0, [None] * len(self.blocks), caches)

    def _encode(self, ids: torch.Tensor, states: list[CollectionState]) -> torch.Tensor:
        """ids (B, T) continuing B streams (one state each, updated in place) → final hidden states (B, T, d)."""
        x = self.embed_tokens(ids)
        self.stats = {}
        for i, block in enumerate(self.blocks):
            gla = None if states[0].gla[i] is None else torch.cat([s.gla[i] for s in states])
            x, gla = block(x, gla, [s.sparse[i] for s in states], self.stats)
            for b, s in enumerate(states):
                s.gla[i] = gla[b : b + 1]
        for s in states:
            s.length += ids.shape[1]
        return self.norm(x)

    def forward(self, ids: torch.Tensor, return_states: bool = False):
        """ids (B, T) → hidden (B, T, d) [, the B CollectionStates]."""
        states = [self.new_state() for _ in range(ids.shape[0])]
        h = self._encode(ids, states)
        return (h, states) if return_states else h

    @torch.no_grad()
    def prefill(
        self,
        tokens: torch.Tensor | np.ndarray | Iterable,
        chunk_tokens: int = 4096,
        state: CollectionState | None = None,
        on_chunk: Callable[[int, torch.Tensor], None] | None = None,
        record: bool = False,
    ) -> CollectionState:
        """Encode a token stream (1-D ids, or an iterable of 1-D pieces) in chunks of ``chunk_tokens``; a given
        state is continued, else a new one made (``record``: keeping what a question's read needs).
        ``on_chunk(start, hidden (T, d))`` receives each chunk's final states."""
        state = state if state is not None else self.new_state(record)
        self._check(state)
        for ids in _chunks(tokens, chunk_tokens):
            start = state.length
            h = self._encode(ids[None], [state])
            if on_chunk is not None:
                on_chunk(start, h[0])
        return state

    def read(
        self, question_ids: torch.Tensor, layers: list[CollectionLayer] | list[DenseLayer], k_tokens: int = 0
    ) -> ReadOutput:
        """A question's tokens (Tq,) through the stack, each sparse layer reading its stored collection layer
        (``k_tokens`` tokens selected per question token, 0: the config's ``topk_tokens``)."""
        x = self.embed_tokens(torch.as_tensor(question_ids, dtype=torch.int64).reshape(1, -1))
        k_tokens = k_tokens or self.cfg.topk_tokens
        reads = []
        for block, layer in zip(self.blocks, layers, strict=True):
            x, trace = block.read(x, layer, k_tokens)
            reads.append(trace)
        return ReadOutput(self.norm(x)[0], reads)

    def _check(self, state: CollectionState) -> None:
        if state.model_version != self.model_version:
            raise ValueError(
                f"the collection cache was built by model version {state.model_version}, but this model is "
                f"{self.model_version}: re-encode the collection with this model"
            )

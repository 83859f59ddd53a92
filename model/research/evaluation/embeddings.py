"""Sentence embeddings of all-MiniLM-L6-v2 (``model.network.minilm``), with a content-addressed disk cache.

Every text's normalized embedding is stored under a hash of the model and the text, in shards under
``~/.cache/indexpool/eval/minilm`` (``INDEXPOOL_EVAL_CACHE`` overrides the root), so a corpus is encoded once
and a haystack that differs by one inserted sentence re-encodes only the passages that changed.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from model.network.minilm import DIM, minilm

CACHE_ROOT = Path(os.environ.get("INDEXPOOL_EVAL_CACHE", Path.home() / ".cache" / "indexpool" / "eval"))
MODEL_KEY = "all-MiniLM-L6-v2/max256"
SHARD_TEXTS = 1024  # texts encoded (and saved) per shard, so an interrupted run resumes


def _key(text: str) -> str:
    return hashlib.blake2b(f"{MODEL_KEY}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class MiniLMEncoder:
    """Encodes texts to L2-normalized float32 vectors; stored texts are read from the cache."""

    def __init__(self, cache_dir: Path = CACHE_ROOT / "minilm") -> None:
        self.cache_dir = cache_dir
        self._cached: dict[str, np.ndarray] | None = None

    def _load_cache(self) -> dict[str, np.ndarray]:
        if self._cached is None:
            self._cached = {}
            for shard in sorted(self.cache_dir.glob("*.npz")):
                with np.load(shard) as data:
                    self._cached.update(zip(data["keys"].tolist(), data["vectors"], strict=True))
        return self._cached

    def encode_uncached(self, texts: Sequence[str]) -> np.ndarray:
        """Encode without touching the cache (questions, answer candidates)."""
        return minilm().encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (one row each), encoding and caching only the texts not seen before."""
        cache = self._load_cache()
        keys = [_key(t) for t in texts]
        missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in cache}.items())
        started = time.perf_counter()
        for i in range(0, len(missing), SHARD_TEXTS):
            chunk = missing[i : i + SHARD_TEXTS]
            vectors = self.encode_uncached([t for _, t in chunk])
            self._save_shard([k for k, _ in chunk], vectors)
            cache.update(zip((k for k, _ in chunk), vectors, strict=True))
            if len(missing) > SHARD_TEXTS:
                done = min(i + SHARD_TEXTS, len(missing))
                print(
                    f"  MiniLM: encoded {done}/{len(missing)} new texts ({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
        if not keys:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([cache[k] for k in keys])

    def _save_shard(self, keys: list[str], vectors: np.ndarray) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        name = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
        partial = self.cache_dir / f"{name}.partial"
        with partial.open("wb") as out:
            np.savez(out, keys=np.array(keys, dtype="U32"), vectors=vectors.astype(np.float32))
        partial.rename(self.cache_dir / f"{name}.npz")  # readers only ever see complete shards

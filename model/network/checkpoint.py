"""The IndexPool checkpoint: where it is, its format, and loading it once per process.

A checkpoint holds an :class:`IndexPoolNet` in float16, its HybridConfig, the weights of the evidence score
(:class:`EvidenceWeights`) and training metadata. Where it is: :func:`model.network.paths.indexpool_checkpoint`.
"""

from __future__ import annotations

import hashlib
import io
import threading
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from pathlib import Path

import torch

from model.network.hybrid import HybridConfig
from model.network.net import IndexPoolNet
from model.network.paths import indexpool_checkpoint
from model.tokenizer import Tokenizer, load_tokenizer

FORMAT = "indexpool-checkpoint/1"


@dataclass
class EvidenceWeights:
    """How the terms of the evidence score are combined (fitted by training, stored in the checkpoint)."""

    read: float = 0.0  # w_read: the question-time read (attention mass through the IndexPool indexer)
    match: float = 1.0  # w_match: the token-match term
    semantic: float = 1.0  # w_sem: the pooled-state cosine
    doc: float = 0.5  # w_doc: the document-level semantic prior
    redundancy: float = 0.8  # summaries: skip a sentence this similar (cosine) to one already chosen
    lexical: float = 0.0  # w_lex: BM25 of the question's words (checkpoints before 2026-12-05 have none: 0)
    min_coverage: float = 0.0  # an answer whose best passage holds less of the question's words is not confident
    dense: float = 0.0  # w_dense: the MiniLM cosine (checkpoints before 2026-12-05's second calibration have none: 0)
    confident_dense: float = 1.0  # an answer whose best passage's MiniLM cosine reaches this is confident all the same
    sentence: float = 0.0  # w_sent: the best MiniLM cosine of a passage's sentences (before 2026-12-05's third: 0)

    @classmethod
    def from_dict(cls, data: dict) -> EvidenceWeights:
        """The weights stored in a checkpoint; fields of older checkpoints that no longer exist are ignored (the
        "indexer" term of checkpoints up to 599c693cbc9a was fitted to 0 and never computed; they have no "read")."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def save_checkpoint(net: IndexPoolNet, path: Path, evidence: EvidenceWeights, meta: dict) -> str:
    """Write the float16 weights, config and evidence weights; returns the weights hash (set as cfg.weights_id)."""
    state = {
        k: v.detach().cpu().to(torch.float16) if v.is_floating_point() else v.cpu() for k, v in net.state_dict().items()
    }
    buf = io.BytesIO()
    torch.save(state, buf)
    weights_id = hashlib.sha256(buf.getvalue()).hexdigest()[:12]
    net.cfg.weights_id = weights_id
    payload = {"format": FORMAT, "config": asdict(net.cfg), "state": state, "evidence": asdict(evidence), "meta": meta}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    torch.save(payload, tmp)
    tmp.replace(path)
    return weights_id


def load_checkpoint(path: Path) -> tuple[IndexPoolNet, EvidenceWeights, dict]:
    """The checkpoint's model. Weights the network no longer has (heads removed since) are left out."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload.get("format") != FORMAT:
        raise ValueError(f"{path}: not an IndexPool checkpoint ({payload.get('format')!r})")
    config = {"indexer_key_window": 1} | payload["config"]  # checkpoints before the field had token keys
    net = IndexPoolNet(HybridConfig.from_dict(config))
    expected = net.state_dict()
    state = {k: v.float() if v.is_floating_point() else v for k, v in payload["state"].items() if k in expected}
    net.load_state_dict(state)
    net.eval()
    return net, EvidenceWeights.from_dict(payload["evidence"]), payload["meta"]


@dataclass(frozen=True)
class Model:
    """A loaded checkpoint: the network, its evidence weights and the tokenizer, as inference uses them."""

    net: IndexPoolNet
    weights: EvidenceWeights
    tokenizer: Tokenizer
    path: Path

    @property
    def weights_id(self) -> str:
        return self.net.cfg.weights_id

    @cached_property
    def match_keys(self) -> torch.Tensor:
        """(V, e) the token-match head's unit vocabulary keys, computed once (every question reads them)."""
        with torch.no_grad():
            return self.net.match.keys(self.net.model.embed.weight)


_models: dict[tuple[Path, int], Model] = {}  # by (checkpoint, its mtime): loaded once per process
_models_lock = threading.Lock()


class CheckpointMissing(FileNotFoundError):
    """No checkpoint at the path; the message says where it was looked for."""


def load_model(path: Path | None = None) -> Model:
    """The checkpoint at ``path`` (default :func:`indexpool_checkpoint`), loaded once per process."""
    path = (path or indexpool_checkpoint()).resolve()
    if not path.is_file():
        raise CheckpointMissing(f"the IndexPool model checkpoint is not installed ({path})")
    key = (path, path.stat().st_mtime_ns)
    with _models_lock:
        if key not in _models:
            net, weights, _ = load_checkpoint(path)
            _models[key] = Model(net, weights, load_tokenizer(), path)
        return _models[key]

"""Sentencepiece tokenization with exact round trips and character spans for every token.

The model (trained by :mod:`model.research.training.train_tokenizer`) neither normalizes nor adds a dummy prefix, and
falls back to UTF-8 byte pieces, so the bytes of the pieces, read with the space marker ``▁`` as a space, are exactly
the UTF-8 bytes of the input. Two kinds of characters would break that and are passed as byte pieces
directly: ``▁`` (U+2581) itself, which the model could not tell from a space, and lone surrogates, which
are not UTF-8 (they travel as their 'surrogatepass' bytes). Spans are computed from the pieces' byte lengths,
never from sentencepiece's offsets, so they do not depend on its version.

A byte piece in the middle of a character has an empty span: the character's span belongs to its first
byte piece, and the spans of a text's tokens always tile it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import sentencepiece as spm

DEFAULT_MODEL = Path(__file__).parent / "assets" / "tokenizer.model"

_SPACE_MARKER = "\u2581"
_AS_BYTES = re.compile(f"([{_SPACE_MARKER}\ud800-\udfff])")
_PROBE = "Tab\there,  two spaces\n\u2581 é\u0301 漢字 😀 \x00 123 \ud800."


class Tokenizer:
    """A loaded sentencepiece model; ids are int32 numpy arrays, spans are character offsets."""

    def __init__(self, model: bytes) -> None:
        self._sp = spm.SentencePieceProcessor(model_proto=model)
        self.model_version = hashlib.sha256(model).hexdigest()[:12]
        self.vocab_size: int = self._sp.get_piece_size()
        self.unk_id: int = self._sp.unk_id()
        self.bos_id: int = self._sp.bos_id()
        self.eos_id: int = self._sp.eos_id()
        self.pad_id: int = self._sp.pad_id()
        self._byte_id = np.array([self._sp.piece_to_id(f"<0x{b:02X}>") for b in range(256)], dtype=np.int32)
        if not all(self._sp.is_byte(int(i)) for i in self._byte_id):
            raise ValueError("tokenizer model was trained without byte_fallback")
        self._piece_bytes = [self._bytes_of(i) for i in range(self.vocab_size)]
        self._byte_len = np.array([len(b) for b in self._piece_bytes], dtype=np.int64)
        if self.decode(self.encode(_PROBE)) != _PROBE:
            raise ValueError("tokenizer model does not round-trip text (normalization or dummy prefix on)")

    def _bytes_of(self, i: int) -> bytes:
        if self._sp.is_byte(i):
            return bytes([int(self._sp.id_to_piece(i)[3:5], 16)])
        if self._sp.is_control(i) or self._sp.is_unknown(i):
            return b""
        return self._sp.id_to_piece(i).replace(_SPACE_MARKER, " ").encode("utf-8")

    def encode(self, text: str) -> np.ndarray:
        return self.encode_batch([text])[0]

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Ids of each text, encoded in one multithreaded sentencepiece call."""
        parts = [_AS_BYTES.split(text) for text in texts]  # plain text, special char, plain text, ...
        plain = self._sp.encode([p for split in parts for p in split[::2]])
        result, k = [], 0
        for split in parts:
            pieces = []
            for j, part in enumerate(split):
                if j % 2:
                    pieces.append(self._byte_id[list(part.encode("utf-8", "surrogatepass"))])
                else:
                    pieces.append(np.asarray(plain[k], dtype=np.int32))
                    k += 1
            result.append(np.concatenate(pieces) if len(pieces) > 1 else pieces[0])
        return result

    def count(self, text: str, piece_chars: int = 1 << 20) -> int:
        """Tokens of ``text``, encoded in pieces of about ``piece_chars`` characters cut at line breaks (so memory
        follows the piece, not the text; a cut can differ from one pass by a token)."""
        total, start = 0, 0
        while start < len(text):
            end = len(text) if len(text) - start <= piece_chars else text.rfind("\n", start, start + piece_chars) + 1
            end = end if end > start else start + piece_chars
            total += len(self.encode(text[start:end]))
            start = end
        return total

    def encode_offsets(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, starts, ends)``: token i is ``text[starts[i]:ends[i]]``; the spans tile ``text``."""
        return self.encode_offsets_batch([text])[0]

    def encode_offsets_batch(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        ids = self.encode_batch(texts)
        return [self._with_spans(text, text_ids) for text, text_ids in zip(texts, ids, strict=True)]

    def _with_spans(self, text: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        byte_ends = np.cumsum(self._byte_len[ids])
        if len(ids) and byte_ends[-1] != len(data):
            raise RuntimeError("token bytes do not add up to the text")
        # chars_before[b]: characters starting before byte b, so a byte inside a character maps past it.
        chars_before = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum((data & 0xC0) != 0x80, out=chars_before[1:])
        ends = chars_before[byte_ends].astype(np.int32)
        starts = np.empty_like(ends)
        starts[:1] = 0
        starts[1:] = ends[:-1]
        return ids, starts, ends

    def decode(self, ids: Iterable[int]) -> str:
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        data = b"".join([self._piece_bytes[i] for i in ids])
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # ids that did not come from encode() may split a character
            return data.decode("utf-8", "replace")


@functools.cache
def _load(path: Path) -> Tokenizer:
    return Tokenizer(path.read_bytes())


def load_tokenizer(path: Path | None = None) -> Tokenizer:
    """The tokenizer at ``path`` (default: the committed asset), loaded once per path."""
    return _load(Path(path or DEFAULT_MODEL).resolve())

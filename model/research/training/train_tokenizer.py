"""Train the project's sentencepiece tokenizer on a deterministic sample of the shared corpora.

    python -m model.research.training.train_tokenizer --data ../shared/data --out model/assets/tokenizer.model

Each source (meeting transcripts, papers, biomedical texts, books, the standard-library docs of this Python)
contributes a fixed byte budget of lines, taken at an even stride over its files in sorted order, so the
same data always gives the same sample. The options below keep every input byte recoverable: no
normalization, no dummy prefix, whitespace kept as is, unseen characters as UTF-8 byte pieces.
Writes the model and, beside it, ``tokenizer.json`` (the model's name with ``.json``): the recipe, the
sample sizes and the model's sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from pathlib import Path

import sentencepiece as spm

from ingest.stdlib_docs import write_stdlib_corpus

TRAINER_OPTIONS = {
    "model_type": "unigram",
    "vocab_size": 16000,
    "normalization_rule_name": "identity",
    "remove_extra_whitespaces": False,
    "add_dummy_prefix": False,
    "byte_fallback": True,
    "split_digits": True,
    "allow_whitespace_only_pieces": True,
    "character_coverage": 0.9995,
    "max_sentence_length": 16384,
    "input_sentence_size": 0,  # train on every sampled line: no random subsampling
    "shuffle_input_sentence": False,
    "num_threads": 2,
    "pad_id": 3,
}

# Bytes of text sampled per source (about 7.5 MB in all).
BUDGETS = {
    "qmsum": 1_500_000,
    "scisumm": 2_000_000,
    "sumpubmed": 1_000_000,
    "gutenberg": 1_500_000,
    "python-stdlib": 1_500_000,
}


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _text_lines(paths: Iterable[Path]) -> Iterator[str]:
    for path in paths:
        yield from _read(path).splitlines()


def _qmsum_lines(data: Path) -> Iterator[str]:
    """QMSum training meetings, one 'speaker: words' line per turn."""
    for path in sorted((data / "qmsum" / "train").glob("*.json")):
        for turn in json.loads(_read(path))["meeting_transcripts"]:
            yield f"{turn['speaker']}: {turn['content']}"


def _scisumm_lines(data: Path) -> Iterator[str]:
    """ScisummNet papers, one sentence (``<S>`` element) a line."""
    for path in sorted((data / "scisumm" / "papers").glob("*/Reference_XML/*.xml")):
        try:
            root = ET.fromstring(_read(path))
        except ET.ParseError:
            continue
        for sentence in root.iter("S"):
            yield "".join(sentence.itertext()).strip()


def source_lines(data: Path, stdlib_dir: Path) -> dict[str, Iterator[str]]:
    """The training sources, each an iterator over its lines in a fixed order."""
    return {
        "qmsum": _qmsum_lines(data),
        "scisumm": _scisumm_lines(data),
        "sumpubmed": _text_lines(sorted((data / "sumpubmed_sample" / "text").glob("*.txt"))),
        "gutenberg": _text_lines(sorted((data / "gutenberg_nltk17" / "texts").glob("*.txt"))),
        "python-stdlib": _text_lines(sorted(stdlib_dir.glob("*.txt"))),
    }


def sample_lines(lines: Iterable[str], budget: int) -> tuple[list[str], int]:
    """Every k-th non-blank line, k chosen so the sample is about ``budget`` UTF-8 bytes.

    Returns the sample and the size in bytes of all the non-blank lines it was drawn from.
    """
    kept = [line for line in lines if line.strip()]
    total = sum(len(line.encode("utf-8")) for line in kept)
    stride = max(1, -(-total // budget))
    sample, size = [], 0
    for line in kept[::stride]:
        size += len(line.encode("utf-8"))
        if size > budget:
            break
        sample.append(line)
    return sample, total


def train(lines: Iterable[str], **options: object) -> bytes:
    """Train a sentencepiece model on ``lines`` with :data:`TRAINER_OPTIONS` (overridden by ``options``)."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, minloglevel=2, **{**TRAINER_OPTIONS, **options}
    )
    return model.getvalue()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "assets" / "tokenizer.model")
    args = parser.parse_args(argv)

    corpus, sources = [], {}
    with tempfile.TemporaryDirectory() as stdlib_dir:
        write_stdlib_corpus(Path(stdlib_dir), inherited=True)  # the corpus the shipped tokenizer was trained on
        for name, lines in source_lines(args.data, Path(stdlib_dir)).items():
            sample, total = sample_lines(lines, BUDGETS[name])
            sampled = sum(len(line.encode("utf-8")) for line in sample)
            sources[name] = {"source_bytes": total, "sample_bytes": sampled, "sample_lines": len(sample)}
            print(f"{name}: {sampled:,} of {total:,} bytes, {len(sample):,} lines", file=sys.stderr)
            corpus.extend(sample)

    model = train(corpus)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(args.out, model)
    recipe = {
        "command": f"python -m model.research.training.train_tokenizer --data {args.data} --out {args.out}",
        "sentencepiece": spm.__version__,
        "python": sys.version.split()[0],  # the standard-library docs come from this Python
        "trainer_options": TRAINER_OPTIONS,
        "sampling": "per source: every k-th non-blank line of its files in sorted order, up to the budget",
        "sources": sources,
        "sample_bytes": sum(s["sample_bytes"] for s in sources.values()),
        "model_bytes": len(model),
        "sha256": hashlib.sha256(model).hexdigest(),
    }
    meta = (json.dumps(recipe, indent=2) + "\n").encode("utf-8")
    _write_atomic(args.out.with_suffix(".json"), meta)
    print(f"wrote {args.out} ({len(model):,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()

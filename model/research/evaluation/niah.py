"""``eval niah``: needle-in-a-haystack retrieval over long collections of real text.

The haystack is built from the ``.txt`` books of a folder (sorted by name), taken whole paragraphs at a time
until the token budget (project tokenizer) is reached. Books such as NLTK's Gutenberg texts keep one sentence
per line without paragraph breaks, so consecutive lines are grouped into paragraphs of at most
``PARAGRAPH_LINES``; the haystack text joins them with blank lines. A needle is a sentence of the form
"The special magic number for <city> is <7 digits>." inserted as a line at a depth of 0, 10, ..., 100% of the
haystack's lines; the question asks for the city's number. The multikey variant adds ``DISTRACTORS`` needles of
the same shape for other cities at random other depths. A trial is a hit when the system's top citation contains the
asked number. Passages never cross paragraph breaks, so a needle changes only its own paragraph's passages
and the dense baseline re-encodes only those (embeddings are cached on disk).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.research.evaluation.metrics import check_citations
from model.research.evaluation.systems import Document, QASystem, available, make_qa_system
from model.tokenizer import load_tokenizer

DEPTHS = tuple(range(0, 101, 10))
VARIANTS = ("single", "multikey")
DISTRACTORS = 3
PARAGRAPH_LINES = 8
CITIES = (
    "Lisbon",
    "Nairobi",
    "Osaka",
    "Quito",
    "Tbilisi",
    "Winnipeg",
    "Bergen",
    "Cusco",
    "Da Nang",
    "Eindhoven",
    "Fez",
    "Gdansk",
    "Hobart",
    "Izmir",
    "Jaipur",
    "Kraków",
    "Lagos",
    "Medellín",
    "Nantes",
    "Oaxaca",
)
NEEDLE = "The special magic number for {city} is {number}."
QUESTION = "What is the special magic number for {city}?"


@dataclass(frozen=True)
class Haystack:
    paragraphs: list[list[str]]  # lines of each paragraph
    tokens: int
    books: list[str]

    def line_position(self, depth: int) -> tuple[int, int]:
        """(paragraph, line) where a needle at ``depth`` percent of the lines is inserted."""
        total = sum(len(p) for p in self.paragraphs)
        target = round(depth / 100 * total)
        for index, lines in enumerate(self.paragraphs):
            if target <= len(lines):
                return index, target
            target -= len(lines)
        return len(self.paragraphs) - 1, len(self.paragraphs[-1])

    def text_with(self, needles: Sequence[tuple[int, str]]) -> str:
        """The haystack text with each needle sentence inserted at its depth (percent)."""
        paragraphs = [list(p) for p in self.paragraphs]
        for depth, sentence in sorted(needles, reverse=True):  # deepest first: earlier positions stay valid
            index, line = self.line_position(depth)
            paragraphs[index].insert(line, sentence)
        return "\n\n".join("\n".join(lines) for lines in paragraphs)


def book_paragraphs(text: str) -> list[list[str]]:
    """Blank-line separated blocks of non-empty lines, cut into groups of at most ``PARAGRAPH_LINES`` lines."""
    paragraphs, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.strip():
            block.append(line.rstrip())
        elif block:
            paragraphs.extend(block[i : i + PARAGRAPH_LINES] for i in range(0, len(block), PARAGRAPH_LINES))
            block = []
    return paragraphs


def build_haystack(folder: Path, tokens: int) -> Haystack:
    """Whole paragraphs of the books in ``folder`` up to ``tokens`` tokens; raises ValueError if too short."""
    tokenizer = load_tokenizer()
    paragraphs: list[list[str]] = []
    books: list[str] = []
    total = 0
    for path in sorted(folder.glob("*.txt")):
        book = book_paragraphs(path.read_text(encoding="utf-8", errors="replace"))
        counts = [len(ids) for ids in tokenizer.encode_batch(["\n".join(p) for p in book])]
        books.append(path.name)
        for paragraph, count in zip(book, counts, strict=True):
            if total + count > tokens:
                return Haystack(paragraphs, total, books)
            paragraphs.append(paragraph)
            total += count
    raise ValueError(f"the .txt files in {folder} hold only {total:,} tokens, fewer than {tokens:,}")


def trial(rng: random.Random, depth: int, variant: str) -> tuple[list[tuple[int, str]], str, str]:
    """Needles (depth, sentence), the question and the expected number for one trial."""
    count = 1 + (DISTRACTORS if variant == "multikey" else 0)
    cities = rng.sample(CITIES, count)
    numbers = [str(n) for n in rng.sample(range(1_000_000, 10_000_000), count)]
    depths = [depth] + [rng.choice([d for d in DEPTHS if d != depth]) for _ in range(count - 1)]
    needles = [(d, NEEDLE.format(city=c, number=n)) for d, c, n in zip(depths, cities, numbers, strict=True)]
    return needles, QUESTION.format(city=cities[0]), numbers[0]


def run_system(system: QASystem, haystacks: dict[int, Haystack], seed: int) -> list[dict[str, Any]]:
    """One result per (length, depth, variant)."""
    results = []
    started = time.perf_counter()
    for length, haystack in haystacks.items():
        rng = random.Random(f"{seed}/{length}")
        for variant in VARIANTS:
            for depth in DEPTHS:
                needles, question, number = trial(rng, depth, variant)
                text = haystack.text_with(needles)
                system.index([Document("haystack", text)])
                citations = system.ask(question, 1).citations[:1]
                check_citations({"haystack": text}, citations, system.name)
                hit = bool(citations) and number in text[citations[0].start : citations[0].end]
                results.append({"tokens": length, "depth": depth, "variant": variant, "hit": hit})
                print(
                    f"  {system.name} {length:,} tokens {variant} depth {depth}%: {'hit' if hit else 'miss'} "
                    f"({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    return results


def accuracy(results: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Hit rate per variant."""
    return {
        v: sum(r["hit"] for r in results if r["variant"] == v) / max(1, sum(r["variant"] == v for r in results))
        for v in VARIANTS
    }


def run_niah(folder: Path, lengths: Sequence[int], systems: Sequence[str], seed: int = 0) -> dict[str, Any]:
    """The ``eval niah --json`` object: top-level ``accuracy``/``results`` are those of the first listed system
    (``null``/empty, with the reason, when it is unavailable); ``systems`` holds every system's."""
    haystacks = {length: build_haystack(folder, length) for length in lengths}
    report: dict[str, Any] = {
        "system": systems[0],
        "haystack": {str(n): {"tokens": h.tokens, "books": h.books} for n, h in haystacks.items()},
        "systems": {},
    }
    for name, system in available(systems, make_qa_system, report):
        print(f"eval niah: {name} at {', '.join(f'{n:,}' for n in lengths)} tokens", file=sys.stderr, flush=True)
        started = time.perf_counter()
        results = run_system(system, haystacks, seed)
        report["systems"][name] = {
            "accuracy": accuracy(results),
            "accuracy_by_tokens": {str(n): accuracy([r for r in results if r["tokens"] == n]) for n in lengths},
            "seconds": time.perf_counter() - started,
            "results": results,
        }
    first = report["systems"][systems[0]]
    report["accuracy"] = first.get("accuracy")
    report["results"] = first.get("results", [])
    if "unavailable" in first:
        report["unavailable"] = first["unavailable"]
    return report

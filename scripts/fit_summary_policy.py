"""Fit the IndexPool summarizer's summary policy (:mod:`model.inference.summary_policy`) on ScisummNet training papers.

``.venv/bin/python scripts/fit_summary_policy.py [--data ../shared/data] [--checkpoint model/assets/indexpool.pt]``
writes ``summary_policy.json`` beside the checkpoint (``--dry-run``: print only).

Papers: the ScisummNet papers that have an abstract, are not listed in ``scisumm/ids_ge5000w.txt`` (the dev
papers: never read here) and have at least 1000 body words, in folder-name order: the order in which training
reads them (``model.research.training.train.load_corpus``). The first ``salience_papers`` of them (from the
checkpoint's train config: 200) trained the salience head, so its scores there are optimistic: they are skipped.
The next 300 are the fitting split, the next 200 the confirming split, the remaining ones (77) a spare check; the
last two were never read by training. Each paper is built exactly as the dev JSONL
(``model.research.evaluation.datasets.scisumm_paper``: abstract stripped from the body, reference = the abstract),
split into sentences as the library splits them, and summarized at the abstract's length, cut to it and scored as
``indexpool eval summarize`` does.

The policy's weights (centrality, first section, digits), its redundancy threshold and minimum sentence length
are chosen by grid search for the best mean ROUGE-L (sentence-level LCS, stemmed, as rouge-score computes it) on
the fitting split alone; the policy is written only when it also beats the default policy on the confirming
split. Candidate features were each checked on both training splits before the grid was fixed: centrality,
first section and digit share helped on both; the last section (conclusions, acknowledgements) helped the
fitting split only, similarity to the introduction added nothing beside centrality, relative-position windows
did no better than the first section, and a sentence-length term hurt both; first-person cue phrases ("we",
"this paper") also help, but are left out so the ranking stays the model's own salience and embeddings with
structural priors, not keyword rules.

Sentence states are encoded once per checkpoint and cached under ``~/.cache/indexpool/summary_policy``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.inference.indexpool_summarizer import IndexPoolSummarizer  # noqa: E402
from model.inference.passages import DocumentText  # noqa: E402
from model.inference.rouge import scorer  # noqa: E402
from model.inference.summarizers import Lead, LexRank  # noqa: E402
from model.inference.summary_policy import (  # noqa: E402
    POLICY_FILE,
    SummaryPolicy,
    combined_scores,
    select,
    sentence_features,
)
from model.network.checkpoint import load_checkpoint, load_model  # noqa: E402
from model.research.evaluation.baselines import fit_budget  # noqa: E402
from model.research.evaluation.datasets import scisumm_paper  # noqa: E402
from model.research.evaluation.metrics import ROUGE_TYPES, rouge  # noqa: E402
from model.research.evaluation.passages import document_text  # noqa: E402

MIN_BODY_WORDS = 1000  # as model.research.training.train.load_corpus
SPLITS = {"fit": 300, "confirm": 200, "spare": None}  # consecutive papers after the salience-trained ones
GRID = {
    "centrality": (0.0, 0.25, 0.5, 0.75, 1.0),
    "first_section": (0.0, 0.25, 0.5, 0.75, 1.0),
    "digits": (0.0, -0.25, -0.5),
    "redundancy": (0.8, 0.9, 1.01),  # 1.01: no redundancy filter (cosines are at most 1)
    "min_words": (5, 10),
}


@dataclass
class Paper:
    id: str
    document: DocumentText
    reference: str
    salience: np.ndarray  # (S,) the model's salience logits
    emb: np.ndarray  # (S, e) unit sentence embeddings
    features: dict[str, np.ndarray]
    words: list[int]
    budget: int
    word_tokens: list[list[list[str]]]  # per sentence, per whitespace word: its ROUGE tokens
    reference_tokens: list[str]


def training_papers(data: Path, skip: int) -> list[dict]:
    """The ScisummNet training papers in training's order, the first ``skip`` (salience-trained) left out."""
    scisumm = data / "scisumm"
    dev = set((scisumm / "ids_ge5000w.txt").read_text().split())
    papers = []
    for paper_dir in sorted((scisumm / "papers").iterdir()):
        if paper_dir.name in dev or not (paper_dir / "summary" / f"{paper_dir.name}.abstract.txt").is_file():
            continue
        paper = scisumm_paper(paper_dir)
        if len(paper["text"].split()) >= MIN_BODY_WORDS:
            papers.append(paper)
    return papers[skip:]


def encode(checkpoint: Path, rows: Sequence[dict], cache: Path) -> list[tuple]:
    """(salience logits, embeddings) of each paper's sentences, cached per checkpoint weights and paper text."""
    model = IndexPoolSummarizer(load_model(checkpoint))
    path = cache / f"{model.model.weights_id}-library-sentences.pkl"
    stored: dict[str, tuple] = pickle.loads(path.read_bytes()) if path.is_file() else {}
    keys = [f"{r['id']}/{hashlib.sha256(r['text'].encode()).hexdigest()[:16]}" for r in rows]
    started, missing = time.perf_counter(), [(k, r) for k, r in zip(keys, rows, strict=True) if k not in stored]
    for n, (key, row) in enumerate(missing, 1):
        salience, emb = model.sentence_scores(document_text(row["id"], row["text"]))
        stored[key] = (salience.astype(np.float32), emb.astype(np.float32))
        if n % 50 == 0 or n == len(missing):
            print(f"encoded {n}/{len(missing)} papers in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(stored))
    return [stored[k] for k in keys]


def rouge_tokens(text: str) -> list[str]:
    return scorer(("rougeL",))._tokenizer.tokenize(text)


def prepare(row: dict, encoded: tuple) -> Paper:
    salience, emb = encoded
    document = document_text(row["id"], row["text"])
    sentences = [document.sentence_text(i).split() for i in range(len(document.sentences))]
    return Paper(
        row["id"],
        document,
        row["reference"],
        salience,
        emb,
        sentence_features(document, emb),
        [len(words) for words in sentences],
        len(row["reference"].split()),
        [[rouge_tokens(w) for w in words] for words in sentences],
        rouge_tokens(_lines(row["reference"])),
    )


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (bit-parallel, Hyyrö 2004)."""
    masks: dict[str, int] = {}
    for j, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for token in a:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def chosen(policy: SummaryPolicy, paper: Paper, default_redundancy: float) -> list[int]:
    scores = combined_scores(policy, paper.salience, paper.features)
    redundancy = default_redundancy if policy.redundancy is None else policy.redundancy
    return select(scores, paper.words, paper.emb, paper.budget, policy.min_words, redundancy)


def fast_rouge_l(policy: SummaryPolicy, papers: Sequence[Paper], default_redundancy: float) -> np.ndarray:
    """Per-paper ROUGE-L F of the policy's summaries: the summary cut to the budget in words, as the harness does."""
    out = np.zeros(len(papers))
    for k, paper in enumerate(papers):
        tokens, left = [], paper.budget
        for i in chosen(policy, paper, default_redundancy):
            if left <= 0:
                break
            for word in paper.word_tokens[i][:left]:
                tokens.extend(word)
            left -= paper.words[i]
        lcs = lcs_length(paper.reference_tokens, tokens) if tokens and paper.reference_tokens else 0
        out[k] = 2 * lcs / (len(tokens) + len(paper.reference_tokens)) if lcs else 0.0
    return out


def full_rouge(policy: SummaryPolicy, papers: Sequence[Paper], default_redundancy: float) -> dict[str, float]:
    """Mean ROUGE-1/2/L/Lsum by rouge-score, exactly as ``eval summarize`` scores."""
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for paper in papers:
        lines = [" ".join(paper.document.sentence_text(i).split()) for i in chosen(policy, paper, default_redundancy)]
        summary = fit_budget(lines, paper.budget)
        for name, value in rouge(summary, [_lines(paper.reference)]).items():
            totals[name] += value
    return {name: round(total / len(papers), 4) for name, total in totals.items()}


def baseline_rouge(system: object, papers: Sequence[Paper]) -> dict[str, float]:
    """Mean ROUGE of a baseline summarizer (LEAD, LexRank) at the same budgets, for context."""
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for paper in papers:
        chosen_lines = [
            " ".join(paper.document.sentence_text(i).split()) for i in system.choose(paper.document, paper.budget)
        ]
        summary = fit_budget(chosen_lines, paper.budget)
        for name, value in rouge(summary, [_lines(paper.reference)]).items():
            totals[name] += value
    return {name: round(total / len(papers), 4) for name, total in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--checkpoint", type=Path, default=ROOT / "model" / "assets" / "indexpool.pt")
    parser.add_argument("--out", type=Path, help=f"default: {POLICY_FILE} beside the checkpoint")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "indexpool" / "summary_policy")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true", help="fit and report, write nothing")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()

    net, weights, meta = load_checkpoint(args.checkpoint)
    weights_id, default_redundancy = net.cfg.weights_id, weights.redundancy
    skip = int(meta.get("train_config", {}).get("salience_papers", 200))
    rows = training_papers(args.data, skip)
    encoded = encode(args.checkpoint, rows, args.cache)
    papers = [prepare(r, e) for r, e in zip(rows, encoded, strict=True)]
    splits, first = {}, 0
    for name, size in SPLITS.items():
        splits[name] = papers[first : None if size is None else first + size]
        first += len(splits[name])
    print(
        f"{len(papers)} training papers after the {skip} salience-trained ones: "
        + ", ".join(f"{k} {len(v)}" for k, v in splits.items()),
        file=sys.stderr,
    )

    default = SummaryPolicy(checkpoint=weights_id)
    base = fast_rouge_l(default, splits["fit"], default_redundancy).mean()
    best, best_score = default, base
    for values in itertools.product(*GRID.values()):
        candidate = replace(default, **dict(zip(GRID, values, strict=True)))
        score = fast_rouge_l(candidate, splits["fit"], default_redundancy).mean()
        if score > best_score + 1e-9:
            best, best_score = candidate, score
    print(
        f"grid of {int(np.prod([len(v) for v in GRID.values()]))} policies: fitting-split ROUGE-L "
        f"{base:.4f} (default) -> {best_score:.4f} {best.to_dict()}",
        file=sys.stderr,
    )

    report: dict[str, dict] = {}
    for name, split in splits.items():
        old = fast_rouge_l(default, split, default_redundancy)
        new = fast_rouge_l(best, split, default_redundancy)
        diff = new - old
        report[name] = {
            "papers": len(split),
            "ids": f"{split[0].id}..{split[-1].id}",
            "default": full_rouge(default, split, default_redundancy),
            "fitted": full_rouge(best, split, default_redundancy),
            "lead": baseline_rouge(Lead(), split),
            "lexrank": baseline_rouge(LexRank(), split),
            "rougeL_gain": round(float(diff.mean()), 4),
            "rougeL_gain_se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 4),
        }
        print(
            f"{name:8s} {len(split):3d} papers  ROUGE-L default {report[name]['default']['rougeL']:.4f}  "
            f"fitted {report[name]['fitted']['rougeL']:.4f}  (LEAD {report[name]['lead']['rougeL']:.4f}, LexRank "
            f"{report[name]['lexrank']['rougeL']:.4f})  gain {report[name]['rougeL_gain']:+.4f} "
            f"± {report[name]['rougeL_gain_se']:.4f}",
            file=sys.stderr,
        )
    record = best.to_dict() | {
        "fit": {
            "script": "scripts/fit_summary_policy.py",
            "papers": "ScisummNet minus ids_ge5000w.txt, >= 1000 body words, folder order, "
            f"the first {skip} (salience-trained) skipped",
            "grid": {k: list(v) for k, v in GRID.items()},
            "splits": report,
        }
    }
    print(json.dumps(record, indent=1))
    if report["confirm"]["rougeL_gain"] <= 0:
        print("the fitted policy does not beat the default on the confirming split: nothing written", file=sys.stderr)
        return 1
    if not args.dry_run:
        out = args.out or args.checkpoint.parent / POLICY_FILE
        out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

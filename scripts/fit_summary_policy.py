"""Fit the IndexPool summarizer's summary policy (:mod:`model.inference.summary_policy`) on every summary domain.

``.venv/bin/python scripts/fit_summary_policy.py [--data ../shared/data] [--checkpoint model/assets/indexpool.pt]``
writes ``summary_policy.json`` beside the checkpoint (``--dry-run``: print only).

Domains (each document summarized at its reference's length, cut to it and scored as ``indexpool eval summarize``
does; ROUGE-L is the sentence-level LCS F-measure, stemmed, as rouge-score computes it):

- ``scisumm_train``: ScisummNet training papers (not in ``scisumm/ids_ge5000w.txt``, >= 1000 body words, folder
  order), after the ``salience_papers`` (checkpoint train config: 200) whose scores trained the salience head: the
  next 100. Reference: the abstract, stripped from the body.
- ``sumpubmed``: the first 100 SumPubMed sample papers (reference: the abstract).
- ``qmsum_train``: the first 80 QMSum training meetings with a general query (reference: its answer).
- ``news``, ``tv``, ``reviews``: the L-Eval news, TV-scene and hotel-review inputs (reference: the first
  instruction's answer, a summary of the whole input).
- ``qmsum_val``: QMSum validation meetings (general query); ``scisumm_dev``: the ScisummNet dev papers.

The policy's weights, redundancy threshold and minimum sentence length are chosen on the grid ``GRID`` by the best
worst-domain margin: per domain, the mean ROUGE-L minus the better of LEAD's and LexRank's, and the policy whose
smallest margin over the domains is largest; among the policies within ``MARGIN_TOLERANCE`` of that smallest
margin (the smallest domain's noise), the one with the largest mean margin. What generalises is reported by leaving
each domain out in turn: the policy fitted on the other domains, scored on the one left out. The shipped policy is
fitted on all of them (so its figures on the development sets are in-sample; the left-out figures are the ones to
quote).

Sentence states are encoded once per checkpoint and cached under ``~/.cache/indexpool/summary_policy``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    policy_for,
    select,
    sentence_features,
    summary_words,
)
from model.network.checkpoint import load_checkpoint, load_model  # noqa: E402
from model.research.evaluation.baselines import fit_budget  # noqa: E402
from model.research.evaluation.datasets import (  # noqa: E402
    convert_leval_summaries,
    convert_qmsum,
    convert_scisumm,
    qmsum_summaries,
    scisumm_paper,
)
from model.research.evaluation.metrics import ROUGE_TYPES, rouge  # noqa: E402
from model.research.evaluation.passages import document_text  # noqa: E402

MIN_BODY_WORDS = 1000  # as model.research.training.train.load_corpus
SIZES = {"scisumm_train": 100, "sumpubmed": 100, "qmsum_train": 80}
GRID = {  # around the policy fitted before the lexrank and opening features (salience 1, lead 1, lexical 0.5)
    "salience": (0.5, 1.0),
    "centrality": (0.0,),
    "first_section": (0.0,),
    "digits": (0.0, -0.25),
    "lead": (0.5, 1.0, 1.5, 2.0, 3.0),
    "opening": (0.0, 1.0, 2.0),
    "lexical": (0.0, 0.5),
    "lexrank": (0.0, 0.5, 1.0),
    "min_words": (3, 5),
    "redundancy": (0.9, 1.01),  # 1.01: no redundancy filter (cosines are at most 1)
}
MARGIN_TOLERANCE = 0.002  # ROUGE-L: what 0.024 on one of the 12 news documents moves their mean


@dataclass
class Paper:
    id: str
    document: DocumentText
    reference: str
    salience: np.ndarray  # (S,) the model's salience logits
    emb: np.ndarray  # (S, e) unit sentence embeddings
    features: dict[str, np.ndarray]
    words: list[int]  # per sentence
    policy_words: list[int]  # per sentence, 0 for a lead-in or a line of symbols (summary_policy.summary_words)
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
    """(salience logits, embeddings) of each paper's sentences, cached per checkpoint weights, paper text and
    sentence spans (a change to the library's splitter re-encodes the papers it splits differently)."""
    model = IndexPoolSummarizer(load_model(checkpoint))
    path = cache / f"{model.model.weights_id}-library-sentences.pkl"
    stored: dict[str, tuple] = pickle.loads(path.read_bytes()) if path.is_file() else {}
    documents = [document_text(r["id"], r["text"]) for r in rows]
    keys = [
        f"{r['id']}/{hashlib.sha256((r['text'] + repr(d.sentences.tolist())).encode()).hexdigest()[:16]}"
        for r, d in zip(rows, documents, strict=True)
    ]
    missing = [(k, d) for k, d in zip(keys, documents, strict=True) if k not in stored]
    started = time.perf_counter()
    for n, (key, document) in enumerate(missing, 1):
        salience, emb = model.sentence_scores(document)
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
        sentence_features(document, emb, len(row["reference"].split())),
        [len(words) for words in sentences],
        [summary_words(document.sentence_text(i)) for i in range(len(document.sentences))],
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
    return select(scores, paper.policy_words, paper.emb, paper.budget, policy.min_words, redundancy)


def summary_rouge_l(paper: Paper, sentences: Sequence[int]) -> float:
    """ROUGE-L F of the chosen sentences cut to the budget in words, as the harness cuts and scores them."""
    tokens, left = [], paper.budget
    for i in sentences:
        if left <= 0:
            break
        for word in paper.word_tokens[i][:left]:
            tokens.extend(word)
        left -= paper.words[i]
    lcs = lcs_length(paper.reference_tokens, tokens) if tokens and paper.reference_tokens else 0
    return 2 * lcs / (len(tokens) + len(paper.reference_tokens)) if lcs else 0.0


def fast_rouge_l(policy: SummaryPolicy, papers: Sequence[Paper], default_redundancy: float) -> np.ndarray:
    """Per-paper ROUGE-L F of the policy's summaries."""
    return np.array([summary_rouge_l(p, chosen(policy, p, default_redundancy)) for p in papers])


def full_rouge(lines_of: Callable[[Paper], list[str]], papers: Sequence[Paper]) -> dict[str, float]:
    """Mean ROUGE-1/2/L/Lsum by rouge-score of the summaries ``lines_of`` gives, exactly as ``eval summarize``."""
    totals = dict.fromkeys(ROUGE_TYPES, 0.0)
    for paper in papers:
        for name, value in rouge(fit_budget(lines_of(paper), paper.budget), [_lines(paper.reference)]).items():
            totals[name] += value
    return {name: round(total / len(papers), 4) for name, total in totals.items()}


def sentence_lines(paper: Paper, sentences: Sequence[int]) -> list[str]:
    return [" ".join(paper.document.sentence_text(i).split()) for i in sentences]


def domain_rows(data: Path, skip: int) -> dict[str, list[dict]]:
    """The documents of every domain (see the module docstring): {"id", "text", "reference"} each."""
    sumpubmed = []
    for path in sorted((data / "sumpubmed_sample" / "text").glob("text_*.txt"))[: SIZES["sumpubmed"]]:
        abstract = path.parent.parent / "abstract" / path.name.replace("text_", "abstract_")
        reference = abstract.read_text(encoding="utf-8").removeprefix("BACKGROUND\n")
        sumpubmed.append({"id": path.stem, "text": path.read_text(encoding="utf-8"), "reference": reference})
    leval = data / "leval" / "Open-ended-tasks"
    rows = {
        "scisumm_train": training_papers(data, skip)[: SIZES["scisumm_train"]],
        "sumpubmed": sumpubmed,
        "qmsum_train": qmsum_summaries(*convert_qmsum(data / "qmsum" / "train"))[: SIZES["qmsum_train"]],
        "news": convert_leval_summaries(leval / "news_summ.jsonl"),
        "tv": convert_leval_summaries(leval / "tv_show_summ.jsonl"),
        "reviews": convert_leval_summaries(leval / "review_summ.jsonl"),
        "qmsum_val": qmsum_summaries(*convert_qmsum(data / "qmsum" / "val")),
        "scisumm_dev": list(convert_scisumm(data / "scisumm")),
    }
    return {name: [r for r in rs if r["text"].strip() and r["reference"].strip()] for name, rs in rows.items()}


_DOMAINS: dict[str, list[Paper]] = {}  # the prepared documents, shared with the grid's worker processes by fork
_REDUNDANCY = 0.0


def _domain_means(policy: SummaryPolicy) -> list[float]:
    return [float(fast_rouge_l(policy, papers, _REDUNDANCY).mean()) for papers in _DOMAINS.values()]


def best_worst_margin(margins: np.ndarray, domains: Sequence[int]) -> int:
    """The policy (row of ``margins`` (P, domains)) whose smallest margin over ``domains`` is largest, or, among
    those within ``MARGIN_TOLERANCE`` of it, the one whose mean margin is largest."""
    worst = margins[:, list(domains)].min(axis=1)  # (P,)
    mean = margins[:, list(domains)].mean(axis=1)  # (P,)
    return int(np.argmax(np.where(worst >= worst.max() - MARGIN_TOLERANCE, mean, -np.inf)))


def main(argv: list[str] | None = None) -> int:
    global _REDUNDANCY
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--checkpoint", type=Path, default=ROOT / "model" / "assets" / "indexpool.pt")
    parser.add_argument("--out", type=Path, help=f"default: {POLICY_FILE} beside the checkpoint")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "indexpool" / "summary_policy")
    parser.add_argument("--threads", type=int, default=2, help="torch threads, and processes for the grid")
    parser.add_argument("--dry-run", action="store_true", help="fit and report, write nothing")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()

    net, weights, meta = load_checkpoint(args.checkpoint)
    weights_id, _REDUNDANCY = net.cfg.weights_id, weights.redundancy
    skip = int(meta.get("train_config", {}).get("salience_papers", 200))
    for name, rows in domain_rows(args.data, skip).items():
        encoded = encode(args.checkpoint, rows, args.cache)
        _DOMAINS[name] = [prepare(r, e) for r, e in zip(rows, encoded, strict=True)]
    names = list(_DOMAINS)
    lead, lexrank = Lead(), LexRank()
    baselines = {
        name: {
            system.name: float(np.mean([summary_rouge_l(p, system.choose(p.document, p.budget)) for p in papers]))
            for system in (lead, lexrank)
        }
        for name, papers in _DOMAINS.items()
    }
    better = np.array([max(baselines[name].values()) for name in names])  # (domains,)
    print(
        ", ".join(f"{n} {len(_DOMAINS[n])}" for n in names), f"({time.perf_counter() - started:.0f} s)", file=sys.stderr
    )

    policies = [
        SummaryPolicy(**dict(zip(GRID, values, strict=True)), checkpoint=weights_id)
        for values in itertools.product(*GRID.values())
    ]
    with multiprocessing.get_context("fork").Pool(args.threads) as pool:
        means = np.array(pool.map(_domain_means, policies, chunksize=8))  # (P, domains)
    margins = means - better
    print(f"grid of {len(policies)} policies ({time.perf_counter() - started:.0f} s)", file=sys.stderr)

    left_out = {}
    for d, name in enumerate(names):
        others = [j for j in range(len(names)) if j != d]
        pick = best_worst_margin(margins, others)
        left_out[name] = {"margin": round(float(margins[pick, d]), 4), "policy": policies[pick].weights()}
    best = policies[best_worst_margin(margins, range(len(names)))]
    shipped = policy_for(args.checkpoint, weights_id)
    report: dict[str, dict] = {}
    for name in names:
        papers = _DOMAINS[name]
        report[name] = {
            "documents": len(papers),
            "fitted": full_rouge(lambda p: sentence_lines(p, chosen(best, p, _REDUNDANCY)), papers),
            "before": full_rouge(lambda p: sentence_lines(p, chosen(shipped, p, _REDUNDANCY)), papers),
            "lead": full_rouge(lambda p: sentence_lines(p, lead.choose(p.document, p.budget)), papers),
            "lexrank": full_rouge(lambda p: sentence_lines(p, lexrank.choose(p.document, p.budget)), papers),
            "left_out_margin": left_out[name]["margin"],
        }
        row = report[name]
        print(
            f"{name:14s} {len(papers):3d}  ROUGE-L fitted {row['fitted']['rougeL']:.4f}  before "
            f"{row['before']['rougeL']:.4f}  LEAD {row['lead']['rougeL']:.4f}  LexRank {row['lexrank']['rougeL']:.4f}"
            f"  left out: margin {row['left_out_margin']:+.4f}",
            file=sys.stderr,
        )
    record = best.to_dict() | {
        "fit": {
            "script": "scripts/fit_summary_policy.py",
            "objective": "largest smallest margin over the domains (mean ROUGE-L minus the better of LEAD and "
            f"LexRank); within {MARGIN_TOLERANCE} of it, the largest mean margin",
            "grid": {k: list(v) for k, v in GRID.items()},
            "domains": report,
            "left_out_policies": {name: v["policy"] for name, v in left_out.items()},
        }
    }
    print(json.dumps(record, indent=1))
    if not args.dry_run:
        out = args.out or args.checkpoint.parent / POLICY_FILE
        out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``indexpool eval qa|summarize|niah``: the evaluation tasks, each with its baselines, as a table or ``--json``.

``add_arguments`` / ``run`` are called by the ``indexpool`` command line; ``python -m model.research.evaluation.cli``
runs the same thing on its own. Exit codes: 0 ok, 1 user error (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from model.research.evaluation.datasets import write_jsonl
from model.research.evaluation.niah import run_niah
from model.research.evaluation.qa import run_qa
from model.research.evaluation.summarize import run_summarize
from model.research.evaluation.systems import QA_SYSTEMS, SUMMARIZERS

QA_COLUMNS = (
    "recall@1",
    "recall@5",
    "recall@10",
    "document@1",
    "rougeL",
    "latency_ms_p50",
    "latency_ms_p95",
    "index_s",
)
SUMMARY_COLUMNS = ("rouge1", "rouge2", "rougeL", "rougeLsum", "seconds")


def _names(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return names


def _lengths(value: str) -> list[int]:
    try:
        lengths = [int(n) for n in _names(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated token counts, got {value}") from None
    if any(n < 1 for n in lengths):
        raise argparse.ArgumentTypeError("token counts must be positive")
    return lengths


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``qa``, ``summarize`` and ``niah`` sub-commands to ``parser``."""
    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK")

    qa = tasks.add_parser("qa", help="evidence recall@1/5/10, document@1, answer ROUGE-L and latency per system")
    qa.add_argument("--corpus", type=Path, required=True, help='JSONL of {"id", "text", "title"?}')
    qa.add_argument(
        "--questions",
        type=Path,
        required=True,
        help='JSONL of {"id", "question", "answers": [str], "evidence": [{"doc", "start", "end"}]}',
    )
    qa.add_argument(
        "--systems", type=_names, default=list(QA_SYSTEMS), help=f"comma-separated (default {','.join(QA_SYSTEMS)})"
    )
    qa.add_argument("--per-question", type=Path, help="also write each system's answer and rank per question")
    qa.add_argument(
        "--scope",
        choices=("corpus", "document"),
        default="corpus",
        help="ask each question over the whole corpus (default), or a question naming its document over it alone",
    )

    summarize = tasks.add_parser("summarize", help="ROUGE-1/2/L/Lsum per summarizer at the same length budget")
    summarize.add_argument(
        "--data",
        type=Path,
        required=True,
        help='JSONL of {"id", "text" | "path", "reference"}; paths are relative to it',
    )
    summarize.add_argument(
        "--systems", type=_names, default=list(SUMMARIZERS), help=f"comma-separated (default {','.join(SUMMARIZERS)})"
    )
    summarize.add_argument(
        "--budget-words", type=_positive, help="summary length for every system (default: each reference's word count)"
    )
    summarize.add_argument(
        "--summary-policy",
        default="",
        metavar="default|PATH",
        help="the IndexPool summarizer's policy: 'default' (salience only) or a JSON file "
        "(default: model/assets/summary_policy.json when fitted for the checkpoint)",
    )

    niah = tasks.add_parser("niah", help="needle-in-a-haystack accuracy per length, depth and variant")
    niah.add_argument("--haystack", type=Path, required=True, help="folder of .txt books")
    niah.add_argument(
        "--tokens",
        type=_lengths,
        default=[32_000, 128_000, 1_000_000],
        help="comma-separated haystack lengths (default 32000,128000,1000000)",
    )
    niah.add_argument(
        "--systems",
        type=_names,
        default=["indexpool", "bm25"],
        help="comma-separated (default indexpool,bm25; add dense for MiniLM: its first run over "
        "a 1M-token haystack encodes it once, 8-15 minutes on 2 cores, then it is cached)",
    )
    niah.add_argument("--seed", type=int, default=0, help="seed of the needle cities, numbers and depths")

    for task in (qa, summarize):
        task.add_argument("--limit", type=_positive, help="evaluate only the first N items")
    for task in (qa, summarize, niah):
        task.add_argument("--json", action="store_true", help="print the JSON report")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}" if value < 1 else f"{value:.1f}"
    return str(value)


def format_table(systems: dict[str, dict[str, Any]], columns: tuple[str, ...]) -> str:
    """One row per system; an unavailable system's row gives the reason."""
    width = max(len(name) for name in systems)
    lines = [f"{'system':<{width}}  " + "  ".join(f"{c:>14}" for c in columns)]
    for name, row in systems.items():
        if "unavailable" in row:
            lines.append(f"{name:<{width}}  unavailable: {row['unavailable']}")
        else:
            lines.append(f"{name:<{width}}  " + "  ".join(f"{_cell(row[c]):>14}" for c in columns))
    return "\n".join(lines)


def _niah_table(report: dict[str, Any]) -> str:
    lines = []
    for name, row in report["systems"].items():
        if "unavailable" in row:
            lines.append(f"{name}: unavailable: {row['unavailable']}")
            continue
        lines.append(
            f"{name}: single {row['accuracy']['single']:.3f}, multikey {row['accuracy']['multikey']:.3f}"
            f" ({row['seconds']:.0f} s)"
        )
        for length, acc in row["accuracy_by_tokens"].items():
            misses = [
                f"{r['variant']}@{r['depth']}%" for r in row["results"] if str(r["tokens"]) == length and not r["hit"]
            ]
            lines.append(
                f"  {int(length):>9,} tokens ({report['haystack'][length]['tokens']:,} built): "
                f"single {acc['single']:.3f}, multikey {acc['multikey']:.3f}"
                + (f"; missed {', '.join(misses)}" if misses else "")
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run the chosen task; prints the table (or JSON) and returns the exit code."""
    try:
        if args.task == "qa":
            per_question: list[dict[str, Any]] | None = [] if args.per_question else None
            report = run_qa(args.corpus, args.questions, args.systems, args.limit, per_question, args.scope)
            if per_question is not None:
                write_jsonl(args.per_question, per_question)
            text = (
                f"{report['questions']} questions ({report['evidence_questions']} with evidence) over "
                f"{report['documents']} documents\n" + format_table(report["systems"], QA_COLUMNS)
            )
        elif args.task == "summarize":
            report = run_summarize(args.data, args.systems, args.limit, args.budget_words, args.summary_policy)
            budget = report["budget_words"]
            text = (
                f"{report['documents']} documents, budget: {budget}{' words' if isinstance(budget, int) else ''}\n"
                + format_table(report["systems"], SUMMARY_COLUMNS)
            )
        else:
            report = run_niah(args.haystack, args.tokens, args.systems, args.seed)
            text = _niah_table(report)
    except (OSError, ValueError, KeyError) as error:
        print(f"indexpool eval: error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="indexpool eval", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

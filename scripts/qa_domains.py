"""The per-domain QA table of BENCHMARKS.md: every development QA set, the model beside BM25 and MiniLM dense.

    python -m model.research.evaluation.datasets --data ../shared/data --out /tmp/evaldata
    python scripts/qa_domains.py --data /tmp/evaldata [--systems indexpool,bm25,dense] [--json OUT]

Each set is one ``indexpool eval qa`` run (the same passages, hit rule and systems): QMSum val by its evidence spans,
the L-Eval open-ended QA sets by their answers (a top-k passage of the question's document holding the normalised
answer, or half of a long answer's content words: ``model.research.evaluation.metrics.answer_in``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from model.research.evaluation.datasets import LEVAL_QA_SETS
from model.research.evaluation.qa import run_qa

SETS = {"qmsum_val": ("qmsum_val_docs.jsonl", "qmsum_val_questions.jsonl")} | {
    name: (f"leval_{name}_docs.jsonl", f"leval_{name}_questions.jsonl") for name in LEVAL_QA_SETS
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--systems", default="indexpool,bm25,dense")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    systems = args.systems.split(",")
    results = {}
    for name in args.sets.split(","):
        docs, questions = SETS[name]
        results[name] = run_qa(args.data / docs, args.data / questions, systems)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    print("| set | questions | " + " | ".join(f"{s} R@5" for s in systems) + " |")
    print("|---|---:|" + "---:|" * len(systems))
    for name, report in results.items():
        counted = report["evidence_questions"] + report["answer_questions"]
        cells = []
        for s in systems:
            r = report["systems"][s]
            cells.append(f"{r['recall@5']:.3f}" if "recall@5" in r else "n/a")
        print(f"| {name} | {counted} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""The per-domain tables of BENCHMARKS.md: every development set, the model beside its baselines, one run per set.

    python -m model.research.evaluation.datasets --data ../shared/data --out /tmp/evaldata
    python scripts/domains.py qa --data /tmp/evaldata [--systems indexpool,bm25,dense] [--scope document] [--json OUT]
    python scripts/domains.py summarize --data /tmp/evaldata [--systems indexpool,lead,lexrank] [--json OUT]

``qa``: one ``indexpool eval qa`` run per set (the same passages, hit rule and systems): QMSum val by its evidence
spans, the L-Eval open-ended QA sets by their answers (a top-k passage of the question's document holding the
normalised answer, or half of a long answer's content words: ``model.research.evaluation.metrics.answer_in``).
``summarize``: one ``indexpool eval summarize`` run per set (ROUGE at the reference's length): ScisummNet papers
(abstract stripped), QMSum val meetings (the answer of their general query), L-Eval news, TV scenes and hotel
reviews.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from model.research.evaluation.datasets import LEVAL_QA_SETS, LEVAL_SUMMARY_SETS
from model.research.evaluation.qa import run_qa
from model.research.evaluation.summarize import run_summarize

QA_SETS = {"qmsum_val": ("qmsum_val_docs.jsonl", "qmsum_val_questions.jsonl")} | {
    name: (f"leval_{name}_docs.jsonl", f"leval_{name}_questions.jsonl") for name in LEVAL_QA_SETS
}
SUMMARY_SETS = {"scisumm": "scisumm_ge5000w.jsonl", "qmsum_val": "summaries_qmsum_val.jsonl"} | {
    name: f"summaries_{name}.jsonl" for name in LEVAL_SUMMARY_SETS
}
TASKS = {  # sets, default systems, the figure of the table
    "qa": (QA_SETS, "indexpool,bm25,dense", "recall@5"),
    "summarize": (SUMMARY_SETS, "indexpool,lead,lexrank", "rougeL"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--systems")
    parser.add_argument("--sets", help="comma-separated (default: every set of the task)")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--scope", choices=("corpus", "document"), default="corpus", help="qa: eval qa's --scope (default corpus)"
    )
    args = parser.parse_args()
    sets, default_systems, figure = TASKS[args.task]
    systems = (args.systems or default_systems).split(",")
    results = {}
    for name in args.sets.split(",") if args.sets else sets:
        if args.task == "qa":
            docs, questions = sets[name]
            results[name] = run_qa(args.data / docs, args.data / questions, systems, scope=args.scope)
        else:
            results[name] = run_summarize(args.data / sets[name], systems)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    print("| set | items | " + " | ".join(f"{s} {figure}" for s in systems) + " |")
    print("|---|---:|" + "---:|" * len(systems))
    for name, report in results.items():
        items = report["evidence_questions"] + report["answer_questions"] if args.task == "qa" else report["documents"]
        cells = [f"{report['systems'][s][figure]:.3f}" if figure in report["systems"][s] else "n/a" for s in systems]
        print(f"| {name} | {items} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

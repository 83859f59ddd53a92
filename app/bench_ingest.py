"""``indexpool bench-ingest``: ingestion throughput (pages/s, tokens/s) and peak memory, measured end to end.

Each phase runs ``indexpool ingest`` as a child process into a fresh temporary library, while this process
samples the resident memory of the child and all of its worker processes from /proc every 50 ms. Reported:
wall time, pages/s, tokens/s, the peak of the summed RSS of the process tree, and the largest single process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.services import UserError
from model.tokenizer import load_tokenizer

PAGE_SIZE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def shared_data_dir() -> Path | None:
    """The project's shared data folder (``../shared/data`` beside the checkout), if present."""
    configured = os.environ.get("INDEXPOOL_SHARED_DATA")
    candidate = Path(configured) if configured else Path(__file__).resolve().parents[2] / "shared" / "data"
    return candidate if candidate.is_dir() else None


def _tree_rss_kb(root: int) -> tuple[int, int]:
    """(sum, max) resident set size in KiB over ``root`` and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
            rss[int(entry.name)] = int(fields[21]) * PAGE_SIZE_KB
        except (OSError, IndexError, ValueError):
            continue
    tree = {root}
    changed = True
    while changed:
        children = {pid for pid, parent in parents.items() if parent in tree and pid not in tree}
        tree |= children
        changed = bool(children)
    sizes = [rss.get(pid, 0) for pid in tree]
    return sum(sizes), max(sizes, default=0)


def _run_measured(command: list[str]) -> tuple[dict[str, Any], float, int, int]:
    """Run ``command``; return its JSON output, wall seconds, and peak tree-sum and single-process RSS (KiB)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = [0, 0]

    def sample() -> None:
        while process.poll() is None:
            total, largest = _tree_rss_kb(process.pid)
            peaks[0], peaks[1] = max(peaks[0], total), max(peaks[1], largest)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    sampler.join()
    seconds = time.perf_counter() - started
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError as error:
        raise RuntimeError(f"ingest produced no report: {stderr.strip()[-500:]}") from error
    return report, seconds, peaks[0], peaks[1]


def _text_slice(text_dirs: list[Path], tokens: int, out_dir: Path) -> int:
    """Copy .txt files into ``out_dir`` until ``tokens`` tokens; the last file is cut. Returns the token count."""
    tokenizer = load_tokenizer()
    total = 0
    for path in sorted(p for d in text_dirs for p in d.rglob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        ids, _, ends = tokenizer.encode_offsets(text)
        if total + len(ids) > tokens:
            text = text[: int(ends[tokens - total - 1])]
        (out_dir / path.name).write_text(text, encoding="utf-8")
        total += min(len(ids), tokens - total)
        if total >= tokens:
            break
    return total


def run_ingest_benchmark(
    pdf_dirs: list[Path],
    text_dirs: list[Path],
    text_tokens: int = 1_000_000,
    workers: int = 2,
    progress: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    say = progress or (lambda _message: None)
    shared = shared_data_dir()
    if not pdf_dirs and shared:
        pdf_dirs = [shared / "pdf_papers_papermage_fixtures", shared / "pdf_py-pdf_sample-files"]
    if not text_dirs and shared:
        text_dirs = [shared / "gutenberg_nltk17" / "texts"]
    if not pdf_dirs or not text_dirs:
        raise UserError("no shared data found: pass --pdfs DIR and --texts DIR")
    phases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="indexpool-bench-") as scratch:
        texts = Path(scratch) / "texts"
        texts.mkdir()
        sliced = _text_slice(text_dirs, text_tokens, texts)
        pdfs = sorted(str(p) for d in pdf_dirs for p in d.rglob("*.pdf"))
        for name, inputs in (
            ("pdfs", pdfs),
            (f"text_{sliced // 1000}k_tokens", [str(texts)]),
        ):
            home = Path(scratch) / f"home-{name}"
            command = [
                sys.executable,
                "-m",
                "app.cli",
                "--home",
                str(home),
                "ingest",
                *inputs,
                "--collection",
                "bench",
                "--workers",
                str(workers),
                "--json",
            ]
            say(f"{name}: indexpool ingest ({len(inputs)} paths) --workers {workers}")
            report, seconds, peak_sum_kb, peak_one_kb = _run_measured(command)
            summary = report["summary"]
            phase = {
                "phase": name,
                "inputs": summary["files"],
                "ingested": summary["ingested"],
                "errors": summary["errors"],
                "pages": summary["pages"],
                "tokens": summary["tokens"],
                "seconds": round(seconds, 2),
                "pages_per_s": round(summary["pages"] / seconds, 2),
                "tokens_per_s": round(summary["tokens"] / seconds),
                "peak_rss_mb": round(peak_sum_kb / 1024),
                "peak_rss_largest_process_mb": round(peak_one_kb / 1024),
                "workers": workers,
            }
            say("  " + ", ".join(f"{k}={v}" for k, v in phase.items() if k != "phase"))
            phases.append(phase)
    return {"cpu_count": os.cpu_count(), "phases": phases}

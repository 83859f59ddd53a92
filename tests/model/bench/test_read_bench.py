"""``indexpool bench-read`` on a small collection of the embedded sample's text: every session answers, the
baseline's ratio is 1, and the citations do not depend on the tier-2 budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main


def test_bench_read_reports_sessions_against_the_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "read.json"
    args = ["bench-read", "--tokens", "20000", "--questions", "3", "--json", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "citations with tier 2 = 0, 10% and 100% of the store: identical" in printed
    report = json.loads(out.read_text())
    assert report["meta"]["tokens"] >= 20_000 and report["identical"]
    results = report["results"]
    assert set(results) == {"indexpool", "uncompressed", "tier2=0", "tier2=100%"}
    assert results["indexpool"]["tier1_bytes"] < results["uncompressed"]["tier1_bytes"] / 4  # INT8 4:1 vs float32
    assert all(len(r["questions"]) == 3 and all(q["tokens_read"] > 0 for q in r["questions"]) for r in results.values())
    assert (
        results["tier2=0"]["tier2_bytes"] == 0
        and results["tier2=100%"]["tier2_bytes"] == results["tier2=0"]["kv_bytes"]
    )
    assert all(q["hit_rate"] == 0 for q in results["tier2=0"]["questions"])
    assert results["tier2=100%"]["summary"]["hit_rate_after_first"] > 0  # related questions read pages again

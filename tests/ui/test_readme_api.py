"""The README's ``gradio_client`` example runs as written against a server (only its URL changes)."""

from __future__ import annotations

import re
from pathlib import Path

from gradio_client import Client, handle_file

README = Path(__file__).resolve().parents[2] / "README.md"


def _api_example() -> str:
    section = README.read_text().split("## The web app's API", 1)[1]
    [code] = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)
    return code


def test_the_readme_api_example_runs(fresh_server_url: str, tmp_path: Path) -> None:
    client = Client(fresh_server_url, verbose=False)
    stdlib = tmp_path / "zip.txt"
    stdlib.write_text(
        "zip(*iterables, strict=False)\n\nIterate over several iterables in parallel. "
        "If strict is true, zip raises a ValueError when the iterables have different lengths."
    )
    log, *_ = client.predict([handle_file(str(stdlib))], "python-stdlib", "", [], api_name="/ingest")
    assert "ingested" in log, log
    papers = []
    for i in range(6):  # documents 2 to 7 of this fresh library (ids in upload order): the example summarizes 3 and 7
        papers.append(tmp_path / f"paper{i}.txt")
        papers[-1].write_text(f"Paper {i}\n\nThe study {i} measured tides. It found {i} new effects. They matter.")
    log, *_ = client.predict([handle_file(str(p)) for p in papers], "papers", "", [], api_name="/ingest")
    assert log.count(": ingested") == 6, log
    table = client.predict("papers", api_name="/documents")
    title_of = {row[0]: row[1] for row in table["data"]}
    assert set(title_of) == set(range(2, 8)), table

    code = _api_example().replace("http://127.0.0.1:7860", fresh_server_url)
    names: dict = {}
    exec(compile(code, str(README), "exec"), names)  # the README's own lines
    assert "ValueError" in names["answer"] and "different lengths" in names["answer"], names["answer"]
    assert "2 documents" in names["label"] or "selection" in names["label"], names["label"]
    titles = {row[2] for row in names["sentences"]["data"]}
    assert titles == {title_of[3], title_of[7]}, names["sentences"]

"""The indexpool CLI end to end on real files: ingest, list, ask with exact citations, remove, exit codes."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import is_loopback, main
from app.services import Services
from storage.library import Library


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def papers_home(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    home = tmp_path_factory.mktemp("papers")
    papers = sorted((shared_data / "pdf_papers_papermage_fixtures").glob("*.pdf"))
    assert main(["--home", str(home), "ingest", *map(str, papers), "--collection", "papers"]) == 0
    return home


def test_ask_json_citations_quote_the_document_text(papers_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(
        capsys,
        "--home",
        str(papers_home),
        "ask",
        "--collection",
        "papers",
        "What datasets were used for evaluation?",
        "--top-k",
        "8",
        "--reader",
        "bm25",
    )
    assert set(answer) >= {"answer", "citations", "timings_ms", "reader"}
    assert answer["reader"] == "bm25" and answer["citations"]
    library = Library(papers_home)
    for citation in answer["citations"]:
        assert set(citation) >= {"doc", "title", "page", "start", "end", "text", "score"}
        document = library.document(citation["doc"], with_text=True)
        assert document.text[citation["start"] : citation["end"]] == citation["text"]
        assert citation["page"] >= 1
    assert answer["citations"][0]["text"] in answer["answer"]


def test_collections_and_documents_json(papers_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collections = run_json(capsys, "--home", str(papers_home), "collections")
    assert [c["name"] for c in collections] == ["papers"]
    assert collections[0]["documents"] >= 7 and collections[0]["tokens"] > 10_000
    documents = run_json(capsys, "--home", str(papers_home), "documents", "--collection", "papers")
    assert all(d["status"] == "ingested" and d["pages"] > 0 for d in documents)


def test_ingest_indexes_so_the_first_question_encodes_nothing(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from model.inference.qa import CollectionIndex

    for name, text in (("a.txt", "Whales breathe air through a blowhole."), ("b.txt", "Trains run on rails.")):
        (tmp_path / name).write_text(text)
    code, out, _ = run(capsys, "--home", str(home), "ingest", str(tmp_path), "--collection", "c")
    assert code == 0
    assert "indexing for the IndexPool reader: 1/2 documents" in out
    assert "indexing for the IndexPool reader: 2/2 documents" in out
    monkeypatch.setattr(CollectionIndex, "build", lambda *_: pytest.fail("the question encoded a document"))
    answer = run_json(capsys, "--home", str(home), "ask", "--collection", "c", "How do whales breathe?")
    assert answer["reader"] == "indexpool" and "blowhole" in answer["citations"][0]["text"]
    monkeypatch.undo()
    (tmp_path / "c.txt").write_text("Penguins swim with their wings.")
    report = run_json(capsys, "--home", str(home), "ingest", str(tmp_path), "--collection", "c")
    assert report["index"]["documents"] == 1  # the new document only
    code, out, _ = run(capsys, "--home", str(home), "ingest", str(tmp_path), "--collection", "d", "--no-index")
    assert code == 0 and "3 ingested" in out and "indexing" not in out
    code, out, _ = run(capsys, "--home", str(home), "ingest", str(tmp_path / "none.pdf"), "--collection", "d")
    assert code == 1 and "indexing" not in out, "an ingest that added nothing indexes nothing it did not name"


def test_reingest_is_a_noop(papers_home: Path, shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paper = sorted((shared_data / "pdf_papers_papermage_fixtures").glob("*.pdf"))[0]
    report = run_json(capsys, "--home", str(papers_home), "ingest", str(paper), "--collection", "papers")
    assert [f["status"] for f in report["files"]] == ["unchanged"]


def test_mixed_batch_ingests_the_good_and_names_the_bad(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "notes.txt").write_text("Attention is all you need. Linear attention runs in linear time.\n")
    (inputs / "empty.txt").write_bytes(b"")
    (inputs / "five.pdf").write_bytes(b"%PDF-")
    (inputs / "sheet.xlsx").write_bytes(b"PK\x03\x04 not really")
    code, out, err = run(capsys, "--home", str(home), "ingest", str(inputs), "--collection", "mixed")
    assert code == 1 and err.strip().count("\n") == 0 and "3 of 4" in err
    assert re.search(r"notes.txt: ingested \(\d+ tokens, 2 sentences, ", out)  # a text file: no pages named
    assert "0 pages" not in out and " tokens in " in out
    for name in ("empty.txt", "five.pdf", "sheet.xlsx"):
        assert f"{name}: error" in out
    for listing in (["collections"], ["documents", "--collection", "mixed"]):
        code, out, _ = run(capsys, "--home", str(home), *listing)
        assert code == 0 and " tokens" in out and "pages" not in out, out
    answer = run_json(capsys, "--home", str(home), "ask", "--collection", "mixed", "linear time")
    assert "Linear attention runs in linear time." in answer["answer"]


def test_documents_are_listed_by_title_and_a_long_title_ends_in_an_ellipsis(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "minutes of the long-range planning committee meeting held in the spring of 2024"
    for name in ("Zebra notes", "apple notes", long):  # by source, "Z" comes before "a"
        (tmp_path / f"{name}.txt").write_text(f"The {name} say little.\n", encoding="utf-8")
    assert run(capsys, "--home", str(home), "ingest", str(tmp_path), "--collection", "c")[0] == 0
    titles = [d["title"] for d in run_json(capsys, "--home", str(home), "documents", "--collection", "c")]
    assert titles == sorted(titles, key=str.casefold) and len(titles) == 3
    code, out, _ = run(capsys, "--home", str(home), "documents", "--collection", "c")
    listed = [line for line in out.splitlines() if "ingested" in line]
    assert code == 0 and [t[:20] in line for t, line in zip(titles, listed, strict=True)] == [True] * 3
    (cut,) = [line for line in listed if "long-range" in line]
    assert "…" in cut and long not in cut


def test_summarize_a_collection_or_some_of_its_documents(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = {
        "tides": "Tidal power turns the rise and fall of the sea into electricity. The tides come twice a day.",
        "wind": "Wind turbines turn moving air into electricity. Offshore farms catch steadier winds.",
    }
    for name, text in texts.items():
        (tmp_path / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    assert run(capsys, "--home", str(home), "ingest", str(tmp_path), "--collection", "c")[0] == 0
    code, out, _ = run(
        capsys, "--home", str(home), "summarize", "--collection", "c", "--budget-words", "30", "--summarizer", "lead"
    )
    assert code == 0 and "collection of 'c'" in out and "from 2 of 2 documents" in out, out
    assert "[1] Tidal power turns the rise and fall of the sea into electricity." in out and "    — tides" in out
    assert "    — wind" in out
    report = run_json(capsys, "--home", str(home), "summarize", "--collection", "c", "--document", "wind")
    assert report["scope"] == "document" and [d["title"] for d in report["documents"]] == ["wind"]
    assert report["documents"][0]["sentences"][0]["text"].startswith("Wind turbines")
    for extra, wanted in (
        (["--out", str(tmp_path / "x.jsonl")], "--out: for files"),
        (["--document", "sun"], "no document 'sun' in collection 'c'"),
    ):
        code, _, err = run(capsys, "--home", str(home), "summarize", "--collection", "c", *extra)
        assert code == 1 and wanted in err, err
    code, _, err = run(capsys, "--home", str(home), "summarize", str(tmp_path))
    assert code == 1 and "--out FILE is required" in err


def test_remove_by_id_and_whole_collection(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.txt").write_text(f"Document {name} talks about {name}-things.\n", encoding="utf-8")
    assert run(capsys, "--home", str(home), "ingest", str(tmp_path), "--collection", "c")[0] == 0
    documents = run_json(capsys, "--home", str(home), "documents", "--collection", "c")
    removed = run_json(capsys, "--home", str(home), "remove", "--collection", "c", str(documents[0]["id"]))
    assert removed["removed"][0]["id"] == documents[0]["id"]
    assert len(run_json(capsys, "--home", str(home), "documents", "--collection", "c")) == 1
    assert run_json(capsys, "--home", str(home), "remove", "--collection", "c", "--all")["documents"] == 1
    assert run_json(capsys, "--home", str(home), "collections") == []


def test_user_errors_exit_1_with_one_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--home", str(home), "ask", "--collection", "nope", "anything")
    assert code == 1 and err.startswith("indexpool: error: no collection named 'nope'") and err.count("\n") == 1
    code, _, err = run(capsys, "--home", str(home), "remove", "--collection", "nope")
    assert code == 1 and "--all" in err


def test_usage_errors_exit_2(home: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--home", str(home), "ask", "no collection given"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["--home", str(home), "ingest", "x", "--collection", "c", "--workers", "0"])
    assert exit_info.value.code == 2


def test_sample_library_builds_from_this_python(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "--home", str(home), "sample", "--limit", "4")
    assert report["collection"] == "python-stdlib" and report["documents"] == 4 and report["errors"] == 0
    assert report["tokens"] > 1000


def test_session_commands(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Gated linear attention keeps a constant-size state.\n", encoding="utf-8")
    assert run(capsys, "--home", str(home), "ingest", str(notes), "--collection", "c")[0] == 0
    created = run_json(capsys, "--home", str(home), "session", "new", "Reading group")
    code, _, err = run(
        capsys,
        "--home",
        str(home),
        "ask",
        "--collection",
        "c",
        "--session",
        str(created["id"]),
        "What state does linear attention keep?",
    )
    assert code == 0, err
    [listed] = run_json(capsys, "--home", str(home), "session", "list")
    assert listed["name"] == "Reading group" and listed["questions"] == 1
    out = tmp_path / "session.json"
    assert (
        run(
            capsys, "--home", str(home), "session", "export", str(created["id"]), "--format", "json", "--out", str(out)
        )[0]
        == 0
    )
    assert json.loads(out.read_text())["questions"][0]["question"] == "What state does linear attention keep?"
    assert run_json(capsys, "--home", str(home), "session", "delete", str(created["id"])) == {"deleted": created["id"]}
    code, _, err = run(capsys, "--home", str(home), "session", "show", str(created["id"]))
    assert code == 1 and "no session with id" in err


def test_serving_beyond_this_machine_needs_a_login(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--home", str(home), "serve", "--host", "0.0.0.0", "--no-sample")
    assert code == 1 and "--host 0.0.0.0 opens the app to other machines: add --auth" in err
    assert err.count("\n") == 1 and "--insecure-no-auth" in err
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")


def test_serving_beyond_this_machine_warns(home: Path) -> None:
    """With a login (or --insecure-no-auth) --host 0.0.0.0 serves, after a warning naming what it opens."""
    for flags, said in (
        (["--auth", "ann:pw"], "listens on every network this machine can reach\n"),
        (
            ["--insecure-no-auth"],
            "listens on every network this machine can reach, without a login (--insecure-no-auth)\n",
        ),
    ):
        command = [sys.executable, "-m", "app.cli", "--home", str(home), "serve", "--host", "0.0.0.0", "--no-sample"]
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = str(free.getsockname()[1])
        server = subprocess.Popen([*command, "--port", port, *flags], stderr=subprocess.PIPE, text=True)
        try:
            line = server.stderr.readline()
        finally:
            server.kill()
            server.wait()
        assert line.startswith("indexpool: warning: --host 0.0.0.0") and line.endswith(said), line


def test_share_makes_a_collection_readable_by_every_user(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("The zebra runs fast.")
    assert main(["--home", str(home), "ingest", str(tmp_path / "a.txt"), "--collection", "zoo"]) == 0
    capsys.readouterr()
    assert Services(home).library.collection_names("alice") == []
    assert run_json(capsys, "--home", str(home), "share", "--collection", "zoo") == {
        "collection": "zoo",
        "shared": True,
    }
    assert Services(home).library.collection_names("alice") == ["zoo"]
    assert main(["--home", str(home), "share", "--collection", "zoo", "--off"]) == 0
    assert Services(home).library.collection_names("alice") == []


def test_a_symlink_loop_argument_fails_alone(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "self").symlink_to(tmp_path / "self")
    (tmp_path / "good.txt").write_text("The zebra runs fast.")
    for argv in (
        ["ingest", str(tmp_path / "self"), str(tmp_path / "good.txt"), "--collection", "c"],
        ["summarize", str(tmp_path / "self"), str(tmp_path / "good.txt"), "--out", str(tmp_path / "s.jsonl"),
         "--summarizer", "lead"],
    ):  # fmt: skip
        code, out, err = run(capsys, "--home", str(home), *argv)
        assert code == 1 and "Traceback" not in err and "1 of 2 inputs could not be" in err, err
        assert "self: " in out + err and "good.txt" in out + err
    assert {(d.title, d.status) for d in Library(home).documents("c")} == {
        ("good", "ingested"),
        ("self", "error"),
    }


def test_ask_checks_the_collection_before_loading_the_model_and_uses_saved_settings(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess
    import sys

    argv = ["--home", str(home), "ask", "anything", "--collection", "nope", "--reader", "indexpool"]
    code = f"import sys; from app.cli import main; status = main({argv!r}); print(status, 'torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["1", "False"] and "no collection named 'nope'" in result.stderr

    (tmp_path / "a.txt").write_text("The zebra runs fast. The lion sleeps. The owl hoots. The cat purrs.")
    assert main(["--home", str(home), "ingest", str(tmp_path / "a.txt"), "--collection", "zoo"]) == 0
    capsys.readouterr()
    Services(home).settings.save({"top_k": 2, "reader": "bm25"})  # the app's settings without a login
    answer = run_json(capsys, "--home", str(home), "ask", "Which animal hoots or purrs?", "--collection", "zoo")
    assert answer["reader"] == "bm25" and len(answer["citations"]) == 2
    answer = run_json(capsys, "--home", str(home), "ask", "Which animal hoots?", "--collection", "zoo", "--top-k", "1")
    assert len(answer["citations"]) == 1

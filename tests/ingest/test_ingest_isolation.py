"""Worker processes: results come back, and hangs, crashes and memory exhaustion become IngestErrors."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_items_isolated
from ingest.sources import InputItem, Limits


class _Crash:
    """Data whose unpickling in the worker kills it the way a crashing native parser would."""

    def __init__(self, how: str) -> None:
        self.how = how

    def __reduce__(self) -> tuple:
        if self.how == "segfault":
            return signal.raise_signal, (signal.SIGSEGV,)
        return os._exit, (3,)


def _run(items: list[InputItem], limits: Limits | None = None, workers: int = 2) -> dict[str, list]:
    out: dict[str, list] = {}
    done: set[str] = set()
    for item, results, seconds, last in parse_items_isolated(items, None, limits or Limits(timeout_s=30), workers):
        assert seconds >= 0 and item.source not in done
        out.setdefault(item.source, []).extend(results)
        if last:
            done.add(item.source)
    assert done == {item.source for item in items}
    return out


def test_results_from_workers(tmp_path: Path) -> None:
    paths = []
    for i in range(5):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_text(f"Document number {i}. It has two sentences.")
    out = _run([InputItem(str(p), "txt", path=p) for p in paths])
    for i, p in enumerate(paths):
        [doc] = out[str(p)]
        assert isinstance(doc, ParsedDocument) and doc.title == str(i)  # its file name: a sentence is no title
        assert len(doc.sentences) == 2


def test_crashing_worker_becomes_an_error_and_the_batch_goes_on() -> None:
    items = [
        InputItem("exit.txt", "txt", data=_Crash("exit")),  # type: ignore[arg-type]
        InputItem("segv.txt", "txt", data=_Crash("segfault")),  # type: ignore[arg-type]
        InputItem("good.txt", "txt", data=b"Still parsed."),
    ]
    out = _run(items, workers=1)
    [exit_error], [segv_error], [good] = out["exit.txt"], out["segv.txt"], out["good.txt"]
    assert isinstance(exit_error, IngestError) and "exit code 3" in exit_error.reason
    assert isinstance(segv_error, IngestError) and "crashed (SIGSEGV)" in segv_error.reason
    assert isinstance(good, ParsedDocument)


def test_hanging_file_times_out_in_wall_time(tmp_path: Path) -> None:
    fifo = tmp_path / "hang.txt"
    os.mkfifo(fifo)  # reading it blocks forever without using the CPU: no writer ever comes
    good = tmp_path / "good.txt"
    good.write_text("Fine.")
    out = _run([InputItem(str(fifo), "txt", path=fifo), InputItem(str(good), "txt", path=good)], Limits(timeout_s=1))
    [error] = out[str(fifo)]
    assert isinstance(error, IngestError)
    assert error.reason == "timed out: no result after 14 s (raise the cap with --timeout SECONDS)"
    assert isinstance(out[str(good)][0], ParsedDocument)


def test_the_time_cap_counts_cpu_time(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("The committee met on Tuesday. It discussed the budget. " * 200_000)  # seconds of CPU to parse
    [error] = _run([InputItem(str(big), "txt", path=big)], Limits(timeout_s=0.2), workers=1)[str(big)]
    assert isinstance(error, IngestError)
    assert error.reason == "timed out after 0.2 s of CPU time (raise the cap with --timeout SECONDS)"


def test_memory_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.html"  # HTML is parsed whole, so its tree has to fit under the cap
    big.write_bytes(b"<html><body>" + b"<p>lorem ipsum dolor sit amet.</p> " * 800_000 + b"</body></html>")
    out = _run([InputItem(str(big), "html", path=big)], Limits(timeout_s=60, memory_bytes=500 * 2**20), workers=1)
    [error] = out[str(big)]
    assert isinstance(error, IngestError) and error.reason.startswith("ran out of memory")


def test_a_large_text_file_streams_in_parts_under_the_memory_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"  # 28 MB: read whole, its sentences took the worker past 500 MB
    big.write_bytes(b"lorem ipsum dolor sit amet. " * 1_000_000)
    out = _run([InputItem(str(big), "txt", path=big)], Limits(timeout_s=120, memory_bytes=500 * 2**20), workers=1)
    parts = out[str(big)]
    assert all(isinstance(doc, ParsedDocument) for doc in parts) and len(parts) == 7
    assert [doc.source for doc in parts] == [f"{big}#part {i}" for i in range(1, 8)]
    assert sum(len(doc.text.split()) for doc in parts) == 5_000_000  # cut between words, none lost


def _worker_children() -> list[int]:
    """Process ids of this process's children running ``ingest.worker``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and b"ingest.worker" in cmdline and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def test_abandoned_iteration_stops_workers(tmp_path: Path) -> None:
    fifo = tmp_path / "hang.txt"
    os.mkfifo(fifo)
    good = InputItem("good.txt", "txt", data=b"Quick.")
    iterator = parse_items_isolated([good, InputItem(str(fifo), "txt", path=fifo)], None, Limits(), workers=2)
    item, *_ = next(iterator)
    assert item is good and len(_worker_children()) == 2
    started = time.monotonic()
    iterator.close()  # the hanging worker is killed and the idle one ended, none is left behind
    assert time.monotonic() - started < 5
    assert _worker_children() == []

"""Walking inputs: folders, types, sizes, and zip archives with hostile content."""

from __future__ import annotations

import hashlib
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from ingest.document import IngestError
from ingest.sources import InputItem, Limits, expand_inputs, item_chunks, item_hash


def _expand(*paths: Path, limits: Limits | None = None) -> tuple[list[InputItem], dict[str, str]]:
    results = list(expand_inputs(paths, limits or Limits()))
    items = [r for r in results if isinstance(r, InputItem)]
    errors = {r.source: r.reason for r in results if isinstance(r, IngestError)}
    return items, errors


def test_folders_recursive_sorted_hidden_skipped_and_problems_reported(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "b" / "z.md").write_text("# Z")
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "c.HTML").write_text("<p>C</p>")
    (tmp_path / "d.jsonl").write_text('{"id": 1, "text": "x"}')
    (tmp_path / ".secret.txt").write_text("hidden")
    (tmp_path / ".hidden" / "x.txt").write_text("hidden")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "five.pdf").write_bytes(b"oops\n")
    items, errors = _expand(tmp_path, tmp_path / "missing.pdf")
    assert [(Path(i.source).name, i.kind) for i in items] == [
        ("a.txt", "txt"),
        ("z.md", "md"),
        ("c.HTML", "html"),
        ("d.jsonl", "jsonl"),
        ("five.pdf", "pdf"),
    ]
    assert all(i.path is not None and i.data is None for i in items)
    assert errors[str(tmp_path / "empty.txt")] == "empty file"
    assert errors[str(tmp_path / "missing.pdf")] == "no such file or directory"
    unsupported = errors[str(tmp_path / "photo.png")]
    assert unsupported.startswith("unsupported file type '.png'") and ".pdf" in unsupported and ".zip" in unsupported
    assert len(errors) == 3


def test_size_cap(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * 2048)
    (tmp_path / "small.txt").write_bytes(b"x" * 10)
    items, errors = _expand(tmp_path, limits=Limits(max_file_bytes=1024))
    assert [Path(i.source).name for i in items] == ["small.txt"]
    assert errors[str(tmp_path / "big.txt")] == "file is 2 KiB, over the size cap of 1 KiB"


def test_zip_members_and_unsafe_paths(tmp_path: Path) -> None:
    archive = tmp_path / "docs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("dir/good.txt", "Good text.")
        zf.writestr("../evil.txt", "escape")
        zf.writestr("/abs/evil.md", "escape")
        zf.writestr("inner.zip", b"PK")
        zf.writestr("notes.docx", b"docx")
        zf.writestr("empty.md", b"")
        zf.writestr("__MACOSX/._good.txt", b"junk")
        zf.writestr("z.md", "# Last")
    items, errors = _expand(archive)
    assert [(i.source, i.kind, b"".join(item_chunks(i))) for i in items] == [
        (f"{archive}!dir/good.txt", "txt", b"Good text."),
        (f"{archive}!z.md", "md", b"# Last"),
    ]
    assert [(i.path, i.member, i.data) for i in items] == [(archive, "dir/good.txt", None), (archive, "z.md", None)]
    assert item_hash(items[0]) == hashlib.sha256(b"Good text.").hexdigest()
    assert "unsafe path" in errors[f"{archive}!../evil.txt"]
    assert "unsafe path" in errors[f"{archive}!/abs/evil.md"]
    assert "nested archive" in errors[f"{archive}!inner.zip"]
    assert errors[f"{archive}!notes.docx"].startswith("unsupported file type '.docx'")
    assert errors[f"{archive}!empty.md"] == "empty file"
    assert len(errors) == 5


def test_zip_members_are_checked_without_keeping_their_bytes(tmp_path: Path) -> None:
    """The 1,100 x 1 MiB archive of the new-user report took the CLI to 1.12 GB: members used to be read into
    memory. Now they are streamed once for the checks and read again by the parsing worker."""
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # stored: deflated, this text would pass for a zip bomb
        for i in range(60):
            zf.writestr(f"m{i:03}.txt", (f"Member {i} says hello. " * 50_000)[: 1 << 20])
    tracemalloc.start()
    try:
        items, errors = _expand(archive)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(items) == 60 and not errors and all(i.data is None and i.size == 1 << 20 for i in items)
    assert peak < 8 << 20  # 60 MiB of members, a few chunks at a time
    assert b"".join(item_chunks(items[7])).startswith(b"Member 7 says hello.")


def test_an_archive_member_that_grew_after_its_check_is_an_error(tmp_path: Path) -> None:
    archive = tmp_path / "docs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.txt", "Short.")
    [item], _ = _expand(archive)
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.txt", "Much longer than it was. " * 100_000)
    with pytest.raises(IngestError, match="the archive member changed: it is now over 6 bytes"):
        list(item_chunks(item))


def test_zip_bomb_by_compression_ratio(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    started = time.perf_counter()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("readme.txt", "Harmless.")
        with zf.open("zeros.txt", "w", force_zip64=True) as member:
            block = bytes(1 << 20)
            for _ in range(200):
                member.write(block)
        zf.writestr("after.txt", "Never reached.")
    assert archive.stat().st_size < 1 << 20
    items, errors = _expand(archive)
    assert [i.source for i in items] == [f"{archive}!readme.txt"]
    reason = errors[f"{archive}!zeros.txt"]
    assert reason.startswith("zip bomb: compression ratio") and "100:1" in reason
    assert time.perf_counter() - started < 20


def test_zip_total_size_and_member_count_caps(tmp_path: Path) -> None:
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(5):
            zf.writestr(f"f{i}.txt", bytes([65 + i]) * 1000)
    items, errors = _expand(archive, limits=Limits(max_archive_total_bytes=2500))
    assert len(items) == 2
    assert "expands to more than" in errors[f"{archive}!f2.txt"] and len(errors) == 1
    items, errors = _expand(archive, limits=Limits(max_archive_members=3))
    assert items == [] and "5 files, over the cap of 3" in errors[str(archive)]


def test_zip_member_whose_declared_size_lies(tmp_path: Path) -> None:
    archive = tmp_path / "liar.zip"
    payload = b"All work and no play makes Jack a dull boy. " * 200
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("liar.txt", payload)
        zf.writestr("honest.txt", "Fine.")
    raw = bytearray(archive.read_bytes())
    size = len(payload).to_bytes(4, "little")
    small = (100).to_bytes(4, "little")
    raw[:] = raw.replace(size, small)  # uncompressed size in the local header and the central directory
    archive.write_bytes(bytes(raw))
    items, errors = _expand(archive)
    assert [i.source for i in items] == [f"{archive}!honest.txt"]
    assert errors[f"{archive}!liar.txt"].startswith("corrupt archive member")


def test_encrypted_member_and_corrupt_archive(tmp_path: Path) -> None:
    archive = tmp_path / "locked.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("secret.txt", "Secret.")
        zf.writestr("open.txt", "Open.")
    raw = bytearray(archive.read_bytes())
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    raw[local + 6] |= 1  # general purpose flag bit 0: encrypted
    raw[central + 8] |= 1
    archive.write_bytes(bytes(raw))
    items, errors = _expand(archive)
    assert [i.source for i in items] == [f"{archive}!open.txt"]
    assert errors[f"{archive}!secret.txt"] == "encrypted archive member (not supported)"
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 this is not really a zip file at all")
    items, errors = _expand(broken)
    assert items == [] and errors[str(broken)].startswith("corrupt zip archive")


def test_a_symlink_loop_is_a_named_error_and_the_rest_goes_on(tmp_path: Path) -> None:
    loop = tmp_path / "self"
    loop.symlink_to(loop)
    good = tmp_path / "good.txt"
    good.write_text("Some text.")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "again").symlink_to(folder / "again")
    (folder / "kept.txt").write_text("More text.")
    results = list(expand_inputs([loop, good, folder], Limits()))
    errors = {r.source: r.reason for r in results if isinstance(r, IngestError)}
    assert errors[str(loop)].startswith("cannot follow the path") and "loop" in errors[str(loop)].lower()
    assert errors[str(folder / "again")] == "a symbolic link that loops or leads nowhere"
    assert sorted(Path(r.source).name for r in results if not isinstance(r, IngestError)) == ["good.txt", "kept.txt"]

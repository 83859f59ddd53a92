"""Turn the paths a user gives (files, folders, zip archives) into input items, one per file to parse.

Nothing here parses content: it only walks, checks sizes and types, and checks archives safely. Every problem
becomes an :class:`IngestError` naming the file, and the walk goes on with the next file. An archive member is
checked here by streaming it once (its real size against the caps, and its hash) without keeping its bytes: the
parsing worker reads it again from the archive (:func:`item_chunks`), so the calling process stays small whatever
the archive holds.
"""

from __future__ import annotations

import hashlib
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ingest.document import IngestError

KINDS = {
    ".pdf": "pdf",
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".jsonl": "jsonl",
    ".xml": "xml",
}
ARCHIVE_SUFFIXES = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".jar"}
SUPPORTED = ", ".join([*KINDS, ".zip"])
# Compression ratios are only meaningful for large members: a few KB of repeated text can compress 200:1.
_RATIO_MIN_BYTES = 1 << 20
_CHUNK = 1 << 20


@dataclass
class Limits:
    max_file_bytes: int = 200 * 2**20
    max_archive_members: int = 10_000
    max_archive_total_bytes: int = 2**30
    max_compression_ratio: float = 100.0
    timeout_s: float = 60.0  # per file, CPU time of its parsing worker
    memory_bytes: int = 4 * 2**30  # address-space cap of a parsing worker


@dataclass
class InputItem:
    """One file to parse: on disk (``path``), a ``member`` of the zip archive at ``path``, or bytes in ``data``."""

    source: str  # the path, or "archive.zip!dir/file.pdf" for a member
    kind: str  # "pdf", "txt", "md", "html", "jsonl" or "xml" (sentence-XML papers)
    path: Path | None = None
    data: bytes | None = None
    member: str | None = None  # the name inside the archive at ``path``
    size: int = 0  # the member's size, measured when it was checked: reading it stops at this many bytes
    content_hash: str = ""  # sha256 hex of the bytes, when already known


def item_chunks(item: InputItem) -> Iterator[bytes]:
    """The bytes of ``item`` in chunks of at most 1 MiB, never all at once; IngestError when they cannot be read
    or an archive member expands past the size it had when it was checked."""
    if item.data is not None:
        if item.data:
            yield item.data
        return
    if item.path is None:
        return
    if item.member is None:
        with open(item.path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                yield chunk
        return
    try:
        with zipfile.ZipFile(item.path) as zf, zf.open(item.member) as handle:
            total = 0
            while chunk := handle.read(_CHUNK):
                total += len(chunk)
                if total > item.size:
                    raise IngestError(item.source, f"the archive member changed: it is now over {size_text(item.size)}")
                yield chunk
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, NotImplementedError, zlib.error) as error:
        raise IngestError(item.source, f"corrupt archive member: {error}") from error


def item_hash(item: InputItem) -> str:
    """The sha256 hex of ``item``'s bytes, read in chunks."""
    if item.content_hash:
        return item.content_hash
    digest = hashlib.sha256()
    for chunk in item_chunks(item):
        digest.update(chunk)
    return digest.hexdigest()


def expand_inputs(paths: Iterable[Path], limits: Limits) -> Iterator[InputItem | IngestError]:
    """Yield an item (or an error) for every file under ``paths`` (made absolute, ``~`` expanded): folders
    recursively, zip archives unpacked. A symbolic link that loops or leads nowhere is an error naming it."""
    for given in paths:
        try:
            path = Path(given).expanduser().resolve()
        except (OSError, RuntimeError) as error:  # RuntimeError: a symbolic link loop
            yield IngestError(str(given), f"cannot follow the path: {getattr(error, 'strerror', None) or error}")
            continue
        if path.is_dir():
            yield from _walk(path, limits)
        elif path.is_file():
            yield from _file(path, limits)
        elif path.exists():
            yield IngestError(str(path), "not a regular file")
        else:
            yield IngestError(str(path), "no such file or directory")


def _walk(folder: Path, limits: Limits) -> Iterator[InputItem | IngestError]:
    try:
        entries = sorted(folder.iterdir())
    except OSError as error:
        yield IngestError(str(folder), f"cannot list folder: {error.strerror or error}")
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry, limits)
        elif entry.is_file():
            yield from _file(entry, limits)
        elif entry.is_symlink() and not entry.exists():
            yield IngestError(str(entry), "a symbolic link that loops or leads nowhere")


def _file(path: Path, limits: Limits) -> Iterator[InputItem | IngestError]:
    source = str(path)
    suffix = path.suffix.lower()
    if suffix != ".zip" and suffix not in KINDS:
        yield IngestError(source, _unsupported(suffix))
        return
    try:
        size = path.stat().st_size
    except OSError as error:
        yield IngestError(source, f"cannot read file: {error.strerror or error}")
        return
    if size == 0:
        yield IngestError(source, "empty file")
    elif size > limits.max_file_bytes:
        yield IngestError(source, _over_cap(size, limits.max_file_bytes))
    elif suffix == ".zip":
        yield from _archive(path, limits)
    else:
        yield InputItem(source, KINDS[suffix], path=path)


def _archive(path: Path, limits: Limits) -> Iterator[InputItem | IngestError]:
    archive = str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            members = [info for info in zf.infolist() if not info.is_dir() and not _hidden(info.filename)]
            if len(members) > limits.max_archive_members:
                yield IngestError(
                    archive, f"archive has {len(members)} files, over the cap of {limits.max_archive_members}"
                )
                return
            budget = limits.max_archive_total_bytes
            for info in members:
                result = _member(zf, info, path, limits, budget)
                if isinstance(result, InputItem):
                    budget -= result.size
                yield result
                if isinstance(result, IngestError) and result.reason.startswith("zip bomb"):
                    return
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError, ValueError) as error:
        yield IngestError(archive, f"corrupt zip archive: {error}")


def _member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, limits: Limits, budget: int
) -> InputItem | IngestError:
    name = info.filename
    source = f"{archive}!{name}"
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in parts:
        return IngestError(source, "unsafe path in archive (absolute or containing '..'); skipped")
    if info.flag_bits & 0x1:
        return IngestError(source, "encrypted archive member (not supported)")
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in ARCHIVE_SUFFIXES:
        return IngestError(source, "nested archive (archives inside archives are not supported)")
    if suffix not in KINDS:
        return IngestError(source, _unsupported(suffix))
    if info.file_size == 0:
        return IngestError(source, "empty file")
    declared_ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size >= _RATIO_MIN_BYTES and declared_ratio > limits.max_compression_ratio:
        return IngestError(
            source,
            f"zip bomb: compression ratio {declared_ratio:.0f}:1 is over the cap of {limits.max_compression_ratio:g}:1",
        )
    if info.file_size > limits.max_file_bytes:
        return IngestError(source, _over_cap(info.file_size, limits.max_file_bytes))
    if info.file_size > budget:
        return IngestError(
            source,
            "zip bomb: the archive expands to more than "
            f"{size_text(limits.max_archive_total_bytes)} (cap); stopped here",
        )
    # Declared sizes can lie: read in chunks and stop at the first cap the real bytes cross.
    cap = min(limits.max_file_bytes, budget)
    if info.compress_size:
        cap = min(cap, max(_RATIO_MIN_BYTES, int(info.compress_size * limits.max_compression_ratio)))
    digest = hashlib.sha256()
    total = 0
    try:
        with zf.open(info) as handle:
            while chunk := handle.read(_CHUNK):
                total += len(chunk)
                if total > cap:
                    return IngestError(
                        source,
                        f"zip bomb: expands beyond {size_text(cap)} although it declares {size_text(info.file_size)}",
                    )
                digest.update(chunk)
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, zlib.error) as error:
        return IngestError(source, f"corrupt archive member: {error}")
    if total == 0:
        return IngestError(source, "empty file")
    return InputItem(source, KINDS[suffix], path=archive, member=name, size=total, content_hash=digest.hexdigest())


def _hidden(name: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") or part == "__MACOSX" for part in name.split("/"))


def _unsupported(suffix: str) -> str:
    what = f"'{suffix}'" if suffix else "without an extension"
    return f"unsupported file type {what} (supported: {SUPPORTED})"


def _over_cap(size: int, cap: int) -> str:
    return f"file is {size_text(size)}, over the size cap of {size_text(cap)}"


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"

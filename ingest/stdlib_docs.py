"""The embedded default corpus: pydoc text of the standard library of the running Python.

Each module is imported and rendered in a worker subprocess (clean environment, output discarded), so an
import that misbehaves can neither hang nor pollute the caller: a module that takes longer than ``timeout``
seconds is skipped and its worker replaced. The caller only walks the standard library's directories to
list module names; it imports nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pkgutil
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

STDLIB_COLLECTION = "python-stdlib"

# Imports that open a browser or windows, print, or need a GUI toolkit; ensurepip (an installer) and
# pydoc_data (pydoc's own data, rendered as a truncated dict) hold no documentation worth reading.
_EXCLUDED = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "ensurepip", "pydoc_data"})
_TEST_PARTS = frozenset({"test", "tests", "idle_test"})
# Workers see no user environment (nothing of it can reach the docs, e.g. ``os.environ``) and hash strings
# with a fixed seed, so sets render in the same order on every run.
_WORKER_ENV = {"PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"}
_OBJECT_ADDRESS = re.compile(r"( at 0x|, handle )[0-9a-fA-F]+")


_GUTTER = re.compile(r"^( *)\| ?")  # pydoc's "     |  " in front of a class's members


def _wanted(name: str) -> bool:
    parts = name.split(".")
    if parts[0] in _EXCLUDED:
        return False
    # A leading underscore marks private modules and __main__ scripts.
    return not any(p.startswith(("_", "test_")) or p in _TEST_PARTS for p in parts)


def _submodules(paths: Iterable[str], prefix: str) -> list[str]:
    names = []
    for info in sorted(pkgutil.iter_modules(list(paths), prefix), key=lambda m: m.name):
        if not _wanted(info.name):
            continue
        names.append(info.name)
        if info.ispkg:
            subdir = os.path.join(info.module_finder.path, info.name.rpartition(".")[2])
            names.extend(_submodules([subdir], info.name + "."))
    return names


def stdlib_module_names() -> list[str]:
    """Public stdlib modules and submodules available here, in a stable order (nothing is imported)."""
    names = []
    for top in sorted(sys.stdlib_module_names):
        if not _wanted(top):
            continue
        spec = importlib.util.find_spec(top)  # top-level names are located without being imported
        if spec is None:
            continue  # not built on this platform (winreg, msvcrt, ...)
        names.append(top)
        if spec.submodule_search_locations:
            names.extend(_submodules(spec.submodule_search_locations, top + "."))
    return names


_INHERITED = re.compile(
    r"^( *)(Methods|Class methods|Static methods|Data descriptors|Readonly properties|Data and other attributes)"
    r" inherited from [^:]+:$"
)
_RULE = re.compile(r"^ *-{20,}$")  # pydoc's line between the sections of a class


def clean_doc(text: str, inherited: bool = False) -> str:
    """Drop pydoc's 'MODULE REFERENCE' boilerplate (the same paragraph in every module), the ``|`` gutter it
    draws down a class's members (so a docstring reads as paragraphs, not as lines of a table), object addresses
    in reprs (``<function f at 0x7f...>``, different on every run) and trailing spaces; unless ``inherited``, also
    the sections of a class's members inherited from another class ("Methods inherited from
    builtins.Exception: ..."): their documentation is the base class's, repeated under every subclass (half the
    text of the standard library's pydoc), and the online documentation does not repeat it either."""
    lines: list[str] = []
    skipping, inherited_at = False, -1  # inherited_at: the indent of the inherited section being dropped
    for line in text.splitlines():
        if line and not line[0].isspace():
            skipping = line == "MODULE REFERENCE"
        if skipping:
            continue
        line = _OBJECT_ADDRESS.sub("", _GUTTER.sub(r"\1", line)).rstrip()
        if not inherited:
            indent = len(line) - len(line.lstrip())
            if inherited_at >= 0 and line and (indent < inherited_at or (indent == inherited_at and _RULE.match(line))):
                inherited_at = -1  # the class ends, or another section follows
            header = _INHERITED.match(line)
            if header:
                while lines and (not lines[-1] or _RULE.match(lines[-1])):  # the rule in front of it goes too
                    lines.pop()
                lines.append("")
                inherited_at = len(header.group(1))
            if inherited_at >= 0:
                continue
        lines.append(line)
    return "\n".join(lines).strip() + "\n"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", errors="replace")
    os.replace(tmp, path)


class _Worker:
    """One subprocess rendering an ordered list of modules; a reader thread forwards its result lines."""

    def __init__(self, names: list[str], results: queue.Queue) -> None:
        self.names = list(names)  # names[0] is the module being rendered
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-P", "-W", "ignore", __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_WORKER_ENV,
            text=True,
            encoding="utf-8",
        )
        self.proc.stdin.write(json.dumps(self.names))
        self.proc.stdin.close()
        threading.Thread(target=self._read, args=(results,), daemon=True).start()

    def _read(self, results: queue.Queue) -> None:
        for line in self.proc.stdout:
            results.put((self, json.loads(line)))
        self.proc.wait()
        results.put((self, None))

    def kill(self) -> None:
        self.proc.kill()


def write_stdlib_corpus(
    out_dir: Path,
    progress: Callable[[int, int, str], None] | None = None,
    limit: int | None = None,
    jobs: int | None = None,
    timeout: float = 30.0,
    inherited: bool = False,
) -> list[Path]:
    """Write ``<module>.txt`` (pydoc plain text, UTF-8) for each public stdlib module into ``out_dir``.

    ``limit`` keeps the first N modules of :func:`stdlib_module_names`. Modules that fail to import or
    render, or take more than ``timeout`` seconds, are skipped. ``progress(done, total, name)`` is called
    after each module. ``inherited``: keep the documentation of inherited members (:func:`clean_doc`). Returns the
    written files in module order.
    """
    names = stdlib_module_names()[:limit]
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    results: queue.Queue = queue.Queue()
    workers = {_Worker(names[i::jobs], results) for i in range(jobs) if names[i::jobs]}
    written: dict[str, Path] = {}
    done = 0
    try:
        while workers:
            try:
                worker, result = results.get(timeout=1.0)
            except queue.Empty:
                for worker in workers:
                    if time.monotonic() - worker.started > timeout:
                        worker.kill()  # its reader thread then reports the end of its output
                continue
            if result is None:  # the worker exited: finished, crashed, or killed while rendering names[0]
                workers.discard(worker)
                if worker.names:
                    done += 1
                    if progress:
                        progress(done, len(names), worker.names[0])
                    if worker.names[1:]:
                        workers.add(_Worker(worker.names[1:], results))
                continue
            name, text = result["name"], result["text"]
            worker.names.pop(0)
            worker.started = time.monotonic()
            if text:
                path = out_dir / f"{name}.txt"
                _write_atomic(path, clean_doc(text, inherited))
                written[name] = path
            done += 1
            if progress:
                progress(done, len(names), name)
    finally:  # on an error or an interrupt, leave no worker behind
        for worker in workers:
            worker.kill()
    return [written[n] for n in names if n in written]


def _render_all() -> None:
    """Worker entry point: read a JSON list of module names on stdin, print one JSON line per module."""
    import pydoc

    names = json.loads(sys.stdin.read())
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # whatever an imported module reads or prints goes nowhere
        os.dup2(devnull, fd)
    for name in names:
        try:
            text = pydoc.render_doc(name, renderer=pydoc.plaintext)
        except BaseException:  # noqa: B036 - an import may raise anything, SystemExit included
            text = ""
        out.write(json.dumps({"name": name, "text": text}) + "\n")
        out.flush()


if __name__ == "__main__":
    _render_all()

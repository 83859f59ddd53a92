"""The embedded default corpus: pydoc text of the standard library, built in worker subprocesses."""

from __future__ import annotations

from pathlib import Path

from ingest.stdlib_docs import clean_doc, stdlib_module_names, write_stdlib_corpus


def test_module_names() -> None:
    names = stdlib_module_names()
    assert names == stdlib_module_names()
    assert {"json", "json.decoder", "os", "email.mime.text", "collections.abc"} <= set(names)
    assert len(names) > 300
    for name in names:
        parts = name.split(".")
        assert not any(p.startswith("_") for p in parts), name
        assert not {"test", "tests", "idle_test"} & set(parts), name
        assert parts[0] not in {"antigravity", "this", "tkinter", "idlelib", "turtle", "turtledemo"}, name


def test_limited_corpus(tmp_path: Path) -> None:
    seen = []
    paths = write_stdlib_corpus(tmp_path, progress=lambda done, total, name: seen.append((done, total)), limit=5)
    names = stdlib_module_names()[:5]
    assert [p.name for p in paths] == [f"{n}.txt" for n in names]
    assert seen[-1] == (5, 5)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert path.stem in text and len(text.split()) > 20
        assert "\b" not in text and "MODULE REFERENCE" not in text and " at 0x" not in text
    assert sorted(tmp_path.iterdir()) == sorted(paths)  # no temporary files left behind


def test_failing_and_hanging_modules_are_skipped(tmp_path: Path, monkeypatch) -> None:
    """A module that cannot be imported is skipped; one that hangs is skipped after the timeout."""
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "hangs.py").write_text("import time\ntime.sleep(60)\n")
    (mods / "exits.py").write_text("raise SystemExit(3)\n")
    (mods / "fine.py").write_text('"""A fine module."""\n')
    names = ["json", "no_such_module_xyz", "exits", "hangs", "fine"]
    monkeypatch.setattr("ingest.stdlib_docs.stdlib_module_names", lambda: names)
    monkeypatch.setattr("ingest.stdlib_docs._WORKER_ENV", {"PYTHONPATH": str(mods)})
    paths = write_stdlib_corpus(tmp_path / "out", jobs=1, timeout=3)
    assert [p.stem for p in paths] == ["json", "fine"]


def test_clean_doc_drops_boilerplate_and_addresses() -> None:
    raw = (
        "Python Library Documentation: module m\n\nNAME\n    m - Doc.\n\nMODULE REFERENCE\n"
        "    https://docs.python.org/3/library/m.html\n\n    The following documentation...\n\n"
        "FUNCTIONS\n    f(x=<object object at 0x7f3f599a4170>)   \n"
    )
    expected = "Python Library Documentation: module m\n\nNAME\n    m - Doc.\n\nFUNCTIONS\n    f(x=<object object>)\n"
    assert clean_doc(raw) == expected


def test_clean_doc_drops_the_gutter_of_class_members() -> None:
    raw = (
        "CLASSES\n    class Timer(Thread)\n     |  Timer(interval, function)\n     |\n"
        "     |  Call a function after a specified number\n     |  of seconds.\n"
    )
    expected = (
        "CLASSES\n    class Timer(Thread)\n      Timer(interval, function)\n\n"
        "      Call a function after a specified number\n      of seconds.\n"
    )
    assert clean_doc(raw) == expected


def test_clean_doc_drops_inherited_members_unless_asked() -> None:
    """A subclass's "inherited from" sections repeat its base class's documentation: the sample drops them, the
    benchmark corpora keep them."""
    raw = (
        "CLASSES\n    class BoundaryError(MessageError)\n     |  Couldn't find terminating boundary.\n     |\n"
        "     |  Methods defined here:\n     |\n     |  check(self)\n     |      Check it.\n     |\n"
        "     |  ----------------------------------------------------------------------\n"
        "     |  Methods inherited from builtins.Exception:\n     |\n"
        "     |  __init__(self, /, *args, **kwargs)\n     |      Initialize self.\n     |\n"
        "     |  ----------------------------------------------------------------------\n"
        "     |  Data descriptors defined here:\n     |\n     |  line\n     |      The line.\n     |\n"
        "     |  ----------------------------------------------------------------------\n"
        "     |  Data descriptors inherited from MessageError:\n     |\n"
        "     |  __weakref__\n     |      list of weak references to the object\n\n"
        "    class CharsetError(MessageError)\n     |  An illegal charset was given.\n"
    )
    kept = clean_doc(raw, inherited=True)
    assert "Initialize self." in kept and "list of weak references" in kept
    dropped = clean_doc(raw)
    assert "inherited" not in dropped and "Initialize self." not in dropped and "weak references" not in dropped
    assert dropped == (
        "CLASSES\n    class BoundaryError(MessageError)\n      Couldn't find terminating boundary.\n\n"
        "      Methods defined here:\n\n      check(self)\n          Check it.\n\n"
        "      ----------------------------------------------------------------------\n"
        "      Data descriptors defined here:\n\n      line\n          The line.\n\n"
        "    class CharsetError(MessageError)\n      An illegal charset was given.\n"
    )

"""HTML to text with the standard library's parser: scripts and styles dropped, h1-h6 kept as headings."""

from __future__ import annotations

from html.parser import HTMLParser

_SKIP = {"script", "style", "noscript", "template", "svg"}
_BLOCKS = {
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "blockquote",
    "pre",
    "hr",
    "figure",
    "figcaption",
    "form",
    "caption",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "body",
    "html",
    "address",
    "details",
    "summary",
}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.blocks: list[tuple[str, bool]] = []  # (text, is_heading)
        self._parts: list[str] = []
        self._skip = 0
        self._in_title = False
        self._heading = False
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCKS:
            self._flush()
            self._heading = tag in _HEADINGS
            self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCKS:
            self._flush()
            self._pre = max(0, self._pre - (tag == "pre"))

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self._parts.append(data)

    def _flush(self) -> None:
        raw = "".join(self._parts)
        self._parts = []
        if self._pre:
            text = "\n".join(line.rstrip() for line in raw.strip("\n").split("\n"))
        else:
            text = " ".join(raw.split())
        if text.strip():
            self.blocks.append((text, self._heading))
        self._heading = False

    def close(self) -> None:
        super().close()
        self._flush()


def html_blocks(html: str) -> tuple[str, list[tuple[str, bool]]]:
    """The <title> and the text blocks of ``html`` as (text, is_heading) pairs, in document order."""
    extractor = _Extractor()
    extractor.feed(html)
    extractor.close()
    return " ".join(extractor.title.split()), extractor.blocks

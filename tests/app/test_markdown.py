"""Document text quoted in the app's Markdown reads as the document's, with no link or emphasis of its own."""

import re

from app.ui.common import escape_markdown


def test_a_web_address_in_document_text_is_quoted_not_autolinked() -> None:
    text = "is https://clearinghouse.net/search/resources/?resource_types=6132 What (other) tasks? a@b.org *now* #1"
    escaped = escape_markdown(text)
    # the browser's Markdown autolinks "https://…" and "a@b.org" from the raw text, backslashes included (a link to
    # "clearinghouse%5C.net"): neither may stand unescaped
    assert "https://" not in escaped and "a@b" not in escaped
    assert re.sub(r"\\(.)", r"\1", escaped) == text  # what CommonMark shows: the text itself

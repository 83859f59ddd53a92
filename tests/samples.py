"""Small sample inputs shared by the tests of several packages."""

PAPER = b"""<PAPER>
  <S sid="0">A Tagger &amp;amp; Its Evaluation</S>
  <ABSTRACT><S sid="1">We present a fast statistical tagger for many languages.</S></ABSTRACT>
  <SECTION title="1 Introduction" number="1">
    <S sid="2">We present a fast statistical tagger for many languages.</S>
    <S sid="3">Taggers   assign tags to words.</S>
  </SECTION>
  <SECTION title="2 Method"><S sid="4">Trigrams are smoothed.</S>
    <SUBSECTION><S>Unknown words use suffixes.</S></SUBSECTION></SECTION>
</PAPER>"""  # a ScisummNet-style sentence-XML paper whose abstract is copied at the start of its introduction


def text_pdf(
    title: str | None, pages: list[list[str | bytes]], differences: bytes = b"", ruled: tuple[int, ...] = ()
) -> bytes:
    """A PDF with one page per entry of ``pages``, each holding its lines in Helvetica, and a metadata title (None:
    no metadata). A ``str`` line is shown as a literal string (no parentheses or backslashes in it), a ``bytes``
    line as it is (e.g. ``b"<0102>"``: codes 1 and 2). ``differences`` changes the font's encoding (e.g.
    ``b"1 /g00 /g01"``: codes 1 and 2 drawn by glyphs whose names map to no character). The pages numbered in
    ``ruled`` (from 0) also draw a horizontal rule."""
    count = len(pages)
    font = 3 + 2 * count  # object numbers: 1 catalog, 2 pages, then (page, contents) per page, the font, the info
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(count)), count),
    ]
    for index, lines in enumerate(pages):
        shown = b" ".join((b"(%s)" % line.encode() if isinstance(line, str) else line) + b" '" for line in lines)
        content = (
            b"BT /F1 11 Tf 72 720 Td 16 TL " + shown + b" ET" + (b" 72 700 m 540 700 l S" if index in ruled else b"")
        )
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (font, 4 + 2 * index)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    encoding = b" /Encoding << /Type /Encoding /Differences [%s] >>" % differences if differences else b""
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica%s >>" % encoding)
    if title is not None:
        objects.append(b"<< /Title (%s) >>" % title.encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    info = b"" if title is None else b" /Info %d 0 R" % len(objects)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\n" % (len(objects) + 1, info)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)

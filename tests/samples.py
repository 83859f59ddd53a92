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


def pdf_bytes(pages: list[bytes], differences: bytes = b"") -> bytes:
    """A minimal PDF whose pages show the given content streams in Helvetica (font /F1), whose encoding has
    ``differences`` (e.g. ``b"1 /g00 /g01"``: codes 1, 2 named by glyph names that map to no character)."""
    encoding = b" /Encoding << /Type /Encoding /Differences [" + differences + b"] >>" if differences else b""
    n = len(pages)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n)) + b"] /Count %d >>" % n,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica" + encoding + b" >>",
    ]
    for i, content in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            b" /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def text_lines(lines: list[bytes]) -> bytes:
    """A content stream showing ``lines`` (PDF string bodies, e.g. ``b"(Total net sales)"`` or ``b"<0102>"``)."""
    shown = b"".join(line + b" Tj 0 -14 Td " for line in lines)
    return b"BT /F1 11 Tf 72 720 Td " + shown + b"ET"

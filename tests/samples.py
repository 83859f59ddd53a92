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

"""Papers as sentence XML, the format of ScisummNet and the ACL Anthology Reference Corpus:

    <PAPER>
      <S sid="0">Title</S>
      <ABSTRACT><S sid="1">...</S>...</ABSTRACT>
      <SECTION title="1 Introduction" number="1"><S sid="6">...</S>...<SUBSECTION>...</SUBSECTION></SECTION>
      ...
    </PAPER>

The file gives the sentences, so they are kept exactly as written (no re-segmentation): each sentence's text is
HTML-unescaped (the corpus escapes some entities twice) and its whitespace collapsed. A leading ``<S>`` child is
the title; later top-level ``<S>`` runs form untitled blocks. Entity expansion is bounded by expat's
amplification limits and external entities are never fetched.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from ingest.document import IngestError
from ingest.segment import section_kind

ROOT_TAG = "PAPER"


@dataclass
class PaperBlock:
    title: str  # the section title ("Abstract" for <ABSTRACT>, "" for sentences outside any element)
    kind: str  # "abstract", "references" or "body" (the ``Section.kind`` values)
    sentences: list[str]


def clean_sentence(text: str) -> str:
    return " ".join(html.unescape(text).split())


def read_paper_xml(data: bytes, source: str) -> tuple[str, list[PaperBlock]]:
    """The title and the blocks of sentences of a sentence-XML paper; IngestError when ``data`` is not one."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        raise IngestError(source, f"damaged XML: {error}") from None
    if root.tag != ROOT_TAG:
        raise IngestError(source, f"not a sentence-XML paper: the root element is <{root.tag}>, expected <{ROOT_TAG}>")
    children = list(root)
    title = ""
    if children and children[0].tag == "S":
        title = clean_sentence("".join(children[0].itertext()))
        children = children[1:]
    blocks: list[PaperBlock] = []
    previous_tag = ""
    for element in children:
        sentences = [clean_sentence("".join(s.itertext())) for s in element.iter("S")]
        if element.tag == "S" and previous_tag == "S":
            blocks[-1].sentences.extend(sentences)
        elif element.tag == "ABSTRACT":
            blocks.append(PaperBlock("Abstract", "abstract", sentences))
        else:
            heading = clean_sentence(element.get("title", "")) if element.tag != "S" else ""
            blocks.append(PaperBlock(heading, section_kind(heading) if heading else "body", sentences))
        previous_tag = element.tag
    for block in blocks:
        block.sentences = [s for s in block.sentences if s]
    blocks = [block for block in blocks if block.sentences]
    if not blocks:
        raise IngestError(source, "no sentences in the XML paper")
    return title, blocks

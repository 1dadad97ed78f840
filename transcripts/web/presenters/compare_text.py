"""What compare diffs: the text a reader sees (rendered Markdown, not its source), word by word.

Table pipes, `**`, list markers and link targets are Markdown syntax, not what anyone reads:
diffing them would mark differences nobody sees, so each text is rendered first and its
visible text, block by block, is what the diff compares.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from html.parser import HTMLParser

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

DIFF_TOKENS = 20_000  # beyond this many words a side, texts are compared line by line
# Below this share of words in common two answers say different things: inline marks would
# strike out one and insert the other wholesale, so they are shown side by side instead.
SIMILARITY_FLOOR = 40

# Elements that end a line where a reader sees one end; cells of a row are kept apart.
_BLOCKS = frozenset(
    {
        "p", "div", "pre", "blockquote", "li", "tr", "table", "ul", "ol", "dl", "dt", "dd",
        "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "figure", "figcaption", "details",
        "summary", "section", "article", "header", "footer",
    }
)  # fmt: skip
_CELLS = frozenset({"td", "th"})
_UNSEEN = frozenset({"script", "style", "template", "button"})


class _VisibleText(HTMLParser):
    """Collects the text of sanitized HTML as it reads: blocks on their own lines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self.unseen = 0
        self.preformatted = 0

    def _tail(self) -> str:
        return self.chunks[-1][-1:] if self.chunks else "\n"

    def _break(self) -> None:
        if self._tail() != "\n":
            self.chunks.append("\n")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _UNSEEN:
            self.unseen += 1
        elif tag in _BLOCKS:
            self._break()
            if tag == "li":
                self.chunks.append("• ")
            elif tag == "pre":
                self.preformatted += 1
        elif tag in _CELLS and self._tail() not in ("\n", " "):
            self.chunks.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _UNSEEN:
            self.unseen = max(self.unseen - 1, 0)
        elif tag in _BLOCKS:
            if tag == "pre":
                self.preformatted = max(self.preformatted - 1, 0)
            self._break()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.unseen:
            return
        if not self.preformatted:
            # Outside <pre> a browser folds whitespace; so does the reader.
            data = re.sub(r"\s+", " ", data)
            if self._tail() in ("\n", " "):
                data = data.lstrip()
        if data:
            self.chunks.append(data)


def rendered_text(html: str) -> str:
    """The text a reader sees in rendered HTML, one block (paragraph, item, row) a line."""
    parser = _VisibleText()
    parser.feed(html)
    parser.close()
    lines = (line.rstrip() for line in "".join(parser.chunks).split("\n"))
    return "\n".join(lines).strip("\n")


# Words keep their trailing whitespace, so spaces alone never count as common ground.
_WORDS = re.compile(r"\s+|\S+\s*")


def _tokens(before: str, after: str) -> tuple[list[str], list[str]]:
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    if len(old) > DIFF_TOKENS or len(new) > DIFF_TOKENS:
        return before.splitlines(keepends=True), after.splitlines(keepends=True)
    return old, new


def word_diff(before: str, after: str) -> tuple[SafeString, float]:
    """after marked up against before, word by word (<ins>, <del>), and their similarity."""
    old, new = _tokens(before, after)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    out: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(str(escape("".join(new[j1:j2]))))
            continue
        removed, added = "".join(old[i1:i2]).strip(), "".join(new[j1:j2])
        if removed:
            out.append(f'<del class="diff-del">{escape(removed)}</del>')
        # Whitespace around the added words stays outside the mark.
        core = added.strip()
        start = added.index(core) if core else len(added)
        out.append(str(escape(added[:start])))
        if core:
            out.append(f'<ins class="diff-add">{escape(core)}</ins>')
            out.append(str(escape(added[start + len(core) :])))
    return mark_safe("".join(out)), matcher.ratio()

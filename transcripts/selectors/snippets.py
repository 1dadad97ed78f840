"""Search snippets as plain text: a message's Markdown read down to its words, then cut by
PostgreSQL's ts_headline around the hits, which it marks with control characters (the view
escapes the text, then turns the marks into <mark>). A query with letters of the scripts
searched by pairs of letters (Chinese, Japanese, Korean, Thai, Arabic, Hebrew:
selectors.search_text) is marked here instead: ts_headline reads a run of such letters as one
word and cannot mark a word inside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from django.db import connections
from markdown_it import MarkdownIt
from markdown_it.token import Token

from transcripts.selectors.search_text import has_paired, hit_spans, marked, query_text

HIT_START, HIT_STOP = "\x02", "\x03"
# How much of a message's text is read back for its snippet (a hit further on falls back to
# the snippet of the raw text, read down to words in the same way).
SOURCE_CHARS = 20_000
HEADLINE_OPTIONS = f"StartSel={HIT_START}, StopSel={HIT_STOP}, MaxWords=24, MinWords=8"
# The block tokens whose content is text as it stands (code).
_CODE_BLOCKS = {"fence", "code_block"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """The messages' Markdown dialect (CommonMark with tables and strikethrough, no raw HTML)."""
    return MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
        ["table", "strikethrough"]
    )


def _inline_words(children: Sequence[Token]) -> list[str]:
    """The text of inline tokens: words, code, image descriptions; breaks as spaces."""
    words = []
    for child in children:
        if child.type in ("text", "code_inline"):
            words.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            words.append(" ")
        elif child.type == "image":
            words.extend(_inline_words(child.children or []))
    return words


def markdown_text(text: str) -> str:
    """The words of Markdown text without its syntax (fences, emphasis, headings, table pipes,
    link targets), one line per block, the hit marks removed so only ts_headline's remain."""
    text = text.replace(HIT_START, " ").replace(HIT_STOP, " ")
    lines = []
    for token in _parser().parse(text):
        if token.type == "inline":
            lines.append("".join(_inline_words(token.children or [])))
        elif token.type in _CODE_BLOCKS:
            lines.append(token.content)
    return "\n".join(line for line in lines if line.strip())


def one_line(snippet: str) -> str:
    """snippet with each run of whitespace (line breaks too) made one space."""
    return " ".join(snippet.split())


def headlines(texts: Sequence[str], query: str, using: str) -> list[str]:
    """ts_headline of each text for the search query, in order (one query on the database
    using, no table read).

    PostgreSQL's parser takes `<...>` for an HTML tag (and `&...;` for an entity) and leaves
    it out of a headline: those characters go through as placeholders, so text shows whole."""
    if not texts:
        return []
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT ts_headline('transcripts_search', t, transcripts_search_query(%s), %s) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
            [query_text(query), HEADLINE_OPTIONS, [_hide_markup(text) for text in texts]],
        )
        return [_show_markup(row[0] or "") for row in cursor.fetchall()]


# Characters PostgreSQL's parser reads markup by, and the private-use ones standing in for them.
_MARKUP = {"<": "\ue002", "&": "\ue003"}


def _hide_markup(text: str) -> str:
    """text with < and & replaced by placeholders (any placeholder in it dropped first)."""
    for char, placeholder in _MARKUP.items():
        text = text.replace(placeholder, "").replace(char, placeholder)
    return text


def _show_markup(text: str) -> str:
    """The placeholders of _hide_markup turned back into < and &."""
    for char, placeholder in _MARKUP.items():
        text = text.replace(placeholder, char)
    return text


@dataclass(frozen=True)
class Snippet:
    """A plain-text snippet with its hits marked, and whether the message goes on before it
    and after it (the page shows an ellipsis there)."""

    text: str
    cut_before: bool = True
    cut_after: bool = True


def _cut(plain: str, headline: str, *, truncated: bool) -> Snippet:
    """headline of plain as a Snippet: cut where it does not reach plain's ends (always at
    the end when plain was truncated)."""
    shown, whole = one_line(headline), one_line(plain)
    words = shown.replace(HIT_START, "").replace(HIT_STOP, "")
    cut_after = truncated or not whole.endswith(words)
    return Snippet(shown, cut_before=not whole.startswith(words), cut_after=cut_after)


def plain_snippets(
    sources: Sequence[str], raw: Sequence[str], query: str, using: str
) -> list[Snippet]:
    """One plain-text snippet per message: the headline of its text read down to words
    (sources, the first SOURCE_CHARS of each), or, when no hit is in that, its raw
    headline (raw, cut from the Markdown) read down to words the same way."""
    plains = [markdown_text(source) for source in sources]
    if has_paired(query):
        return [
            _window(plain, query, truncated=len(source) >= SOURCE_CHARS)
            or Snippet(one_line(_marked_text(fallback)))
            for source, plain, fallback in zip(sources, plains, raw, strict=True)
        ]
    cut = headlines(plains, query, using)
    return [
        _cut(plain, headline, truncated=len(source) >= SOURCE_CHARS)
        if HIT_START in headline
        else Snippet(one_line(_marked_text(fallback)))
        for source, plain, headline, fallback in zip(sources, plains, cut, raw, strict=True)
    ]


# A snippet marked here: how far it reaches before its first hit and after it.
BEFORE_CHARS, AFTER_CHARS = 40, 120


def _window(plain: str, query: str, *, truncated: bool) -> Snippet | None:
    """The snippet of plain around the query's first hit found in it, every hit in it marked,
    cut at spaces where there are some near; None when no hit is found."""
    spans = hit_spans(plain, query)
    if not spans:
        return None
    first, last = spans[0]
    start, stop = max(0, first - BEFORE_CHARS), min(len(plain), last + AFTER_CHARS)
    if start > 0:
        space = plain.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    if stop < len(plain):
        space = plain.rfind(" ", last, stop)
        stop = space if space >= 0 else stop
    shown = [(a - start, b - start) for a, b in spans if a >= start and b <= stop]
    text = marked(plain[start:stop], shown, HIT_START, HIT_STOP)
    return Snippet(one_line(text), cut_before=start > 0, cut_after=truncated or stop < len(plain))


def _marked_text(headline: str) -> str:
    """A raw headline read down to words, its hit marks kept (they pass through the parser as
    private placeholders, since markdown_text removes real ones)."""
    start, stop = "\ue000", "\ue001"
    marked = headline.replace(HIT_START, start).replace(HIT_STOP, stop)
    return markdown_text(marked).replace(start, HIT_START).replace(stop, HIT_STOP)

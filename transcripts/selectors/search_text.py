"""Search queries in every language, written as the messages' search vector reads text
(migration 0025): words without their accents, and the letters of scripts written without
spaces between words or with affixes joined to them (Chinese, Japanese, Korean, Thai, Lao,
Khmer, Myanmar, Arabic, Hebrew) as overlapping pairs, so that 北京 is found inside
我们明天去北京参观故宫, 비빔밥 inside 비빔밥을 and كتاب inside الكتاب.

A query keeps websearch syntax ("a phrase", or, -word). A run of those letters is a phrase of
its pairs (quoted unless already inside quotes); a lone letter is a prefix (it is found as the
first of a pair). Also the hit marks of snippets in those scripts, which ts_headline cannot
place inside a run of letters it reads as one word."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# The letters written as pairs and the marks dropped: as migration 0025's PAIRED and MARK_RANGES.
PAIRED = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3005-\u3007\u3040-\u30ff"
    "\u3100-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff"
    "\u0620-\u063f\u0641-\u064a\u066e-\u06d3\u06d5\u06ee\u06ef\u06fa-\u06fc\u05d0-\u05ea"
)
MARKS = (
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"
    "\u0610-\u061a\u0640\u064b-\u065f\u0670\u06d6-\u06ed"
)
_RUN = re.compile(f"[{PAIRED}]+")
_MARK = re.compile(f"[{MARKS}]")
_PAIRED_CHAR = re.compile(f"[{PAIRED}]")


def has_paired(text: str) -> bool:
    """Whether text has a letter of a script searched by pairs of letters."""
    return _PAIRED_CHAR.search(text) is not None


def _pairs(run: str) -> str:
    """A run of letters as the query finds it: its pairs in order, or the letter alone."""
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))


def query_text(query: str) -> str:
    """query in websearch syntax, each run of letters of the paired scripts written as its
    pairs: a quoted phrase outside quotes, the pairs inside them."""
    query = _MARK.sub("", query)
    out: list[str] = []
    quoted = False
    position = 0
    for run in _RUN.finditer(query):
        before = query[position : run.start()]
        quoted ^= before.count('"') % 2 == 1
        out.append(before)
        pairs = _pairs(run.group())
        if quoted or len(run.group()) == 1:
            out.append(f" {pairs} ")
        else:
            glued = "".join(out).endswith("-")
            out.append(f'{"" if glued else " "}"{pairs}" ')
        position = run.end()
    out.append(query[position:])
    return "".join(out)


def search_terms(query: str) -> list[str]:
    """The words and phrases a query looks for (not those it excludes, not `or`)."""
    terms = []
    for phrase, word in re.findall(r'"([^"]*)"?|(\S+)', query):
        if word and (word.startswith("-") or word.lower() == "or"):
            continue
        term = " ".join((phrase or word).split())
        if term:
            terms.append(term)
    return terms


def _fold(text: str) -> tuple[str, list[int]]:
    """text folded for finding hits (lower case, accents and the dropped marks removed) and,
    for each folded character, the index of the character of text it comes from."""
    folded: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if _MARK.match(char):
            continue
        if _PAIRED_CHAR.match(char):
            pieces = char
        else:
            decomposed = unicodedata.normalize("NFKD", char)
            pieces = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
            pieces = pieces or char
        folded.append(pieces)
        origin.extend([index] * len(pieces))
    return "".join(folded), origin


def _pattern(term: str) -> re.Pattern[str] | None:
    """A term's pattern in folded text: its words apart by anything not a word, whole words
    at ends that are not letters of the paired scripts (those are found inside words)."""
    folded, _ = _fold(term)
    words = re.findall(r"\w+", folded)
    if not words:
        return None
    body = r"\W+".join(re.escape(word) for word in words)
    start = "" if _PAIRED_CHAR.match(words[0][0]) else r"(?<!\w)"
    end = "" if _PAIRED_CHAR.match(words[-1][-1]) else r"(?!\w)"
    return re.compile(start + body + end)


def hit_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Where the query's words and phrases are in text (start, stop), in order, not
    overlapping."""
    folded, origin = _fold(text)
    spans: list[tuple[int, int]] = []
    for term in search_terms(query):
        pattern = _pattern(term)
        if pattern is None:
            continue
        for found in pattern.finditer(folded):
            if found.end() > found.start():
                spans.append((origin[found.start()], origin[found.end() - 1] + 1))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, stop in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        else:
            merged.append((start, stop))
    return merged


def marked(text: str, spans: Sequence[tuple[int, int]], start: str, stop: str) -> str:
    """text with each span between start and stop."""
    out, position = [], 0
    for begin, end in spans:
        out += [text[position:begin], start, text[begin:end], stop]
        position = end
    out.append(text[position:])
    return "".join(out)

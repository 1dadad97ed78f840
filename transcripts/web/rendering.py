"""Turning untrusted message content into safe HTML: Markdown, code, JSON, data and images.

Remote images are never fetched by the page itself: they show as a placeholder naming their
host, with a "Load image" button for hosts in settings.TRANSCRIPTS_IMAGE_HOSTS (the only ones
the Content-Security-Policy lets the browser load) and a link to open any other one."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import nh3
from django.conf import settings
from django.utils.html import escape, format_html
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
# Inline images beyond this (decoded) are not put into the page: a placeholder says their size.
MAX_INLINE_IMAGE_BYTES = 2 * 1024 * 1024
# The key/value view of data shows strings up to this length whole; longer ones fold.
DATA_STRING_CLIP = 160
# ... and at most this many values, so one huge annotation cannot bloat a page.
DATA_VIEW_VALUES = 400
DATA_VIEW_DEPTH = 8
# A remote image's URL is shown up to this many characters (its link keeps it whole).
URL_SHOWN_CHARS = 120

_ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "button", "code", "del", "details", "div", "em", "h1",
    "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s", "span", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class", "target"},
    "button": {"type", "class", "data-image-src", "data-image-alt"},
    "code": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "ol": {"start"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
# Raster formats only: an SVG can carry script and links; other types are not images.
_IMAGE_DATA_URL = re.compile(r"^data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$")
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
    md.add_render_rule("image", _image_placeholder)
    return md


def _image_placeholder(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    """A Markdown image in message text is never fetched by itself: a remote one becomes a
    placeholder (remote_image_html), anything else (or an image inside a link) plain text.

    Model output is untrusted: an image the browser loads by itself can carry the
    conversation to a third party in its URL (a known prompt-injection exfiltration trick)
    and tells its host who read the transcript, and when.
    """
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or [])
    image = remote_image(src)
    if image is None or _inside_link(tokens, idx, env):
        host = f" from {image.host}" if image else ""
        named = alt or src[:URL_SHOWN_CHARS]
        return str(format_html("{} <span>(image{}, not loaded)</span>", named, host))
    return str(remote_image_html(image, alt))


def _inside_link(tokens: list[Token], idx: int, env: Any) -> bool:
    """Whether tokens[idx] sits between a link's opening and closing tokens (worked out once
    per list of inline tokens and kept in the render's env: linear, however many images)."""
    known: dict[int, list[bool]] = env.setdefault("inside_link", {})
    inside = known.get(id(tokens))
    if inside is None:
        inside, depth = [], 0
        for token in tokens:
            inside.append(depth > 0)
            depth += {"link_open": 1, "link_close": -1}.get(token.type, 0)
        known[id(tokens)] = inside
    return inside[idx]


def _link_attributes(element: str, attribute: str, value: str) -> str | None:
    """Keep only http(s)/mailto links, new-tab targets and images from listed hosts."""
    if attribute == "href":
        scheme = urlsplit(value.strip()).scheme.lower()
        if scheme and scheme not in _URL_SCHEMES:
            return None
    if attribute == "target" and value != "_blank":
        return None
    if attribute == "data-image-src":
        image = remote_image(value)
        return value if image is not None and image.listed else None
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


def parse_json_string(value: Any) -> Any:
    """The JSON value a string holds (within a size limit), else value itself."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= MAX_JSON_CHARS * 5:
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    return value


def pretty_text(value: Any) -> tuple[str, bool]:
    """value as readable text and whether that text is JSON (strings holding JSON are parsed)."""
    value = parse_json_string(value)
    if isinstance(value, str):
        return value, False
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=False), True


def render_pretty(text: str, *, is_json: bool) -> SafeString:
    """Text from pretty_text as a block: JSON highlighted unless it is too long to."""
    if not is_json or len(text) > MAX_JSON_CHARS:
        return mark_safe(f'<pre class="plain">{escape(_truncate(text))}</pre>')
    return render_code(text, "json")


def pretty_json(value: Any) -> SafeString:
    """Value pretty-printed and highlighted; strings holding JSON are parsed first."""
    text, is_json = pretty_text(value)
    return render_pretty(text, is_json=is_json)


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


@dataclass(frozen=True)
class InlineData:
    """What a data: URL holds: its mime type, its decoded size and whether the page may show it."""

    mime_type: str
    size: int
    image: bool


def inline_data(url: Any) -> InlineData | None:
    """The data a data: URL holds (None for any other URL)."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header, _, payload = url.partition(",")
    mime_type = header[len("data:") :].split(";")[0].strip().lower() or "text/plain"
    if header.endswith(";base64"):
        stripped = "".join(payload.split())
        size = len(stripped) * 3 // 4 - len(stripped) + len(stripped.rstrip("="))
    else:
        size = len(payload.encode())
    image = size <= MAX_INLINE_IMAGE_BYTES and _IMAGE_DATA_URL.match(url) is not None
    return InlineData(mime_type=mime_type, size=max(size, 0), image=image)


def inline_image_url(url: Any) -> str | None:
    """url if the page may show it in an <img> as it is: a raster data URL up to 2 MB."""
    if not isinstance(url, str):
        return None
    data = inline_data(url)
    return url if data is not None and data.image else None


@dataclass(frozen=True)
class RemoteImage:
    """An image on another host: its URL, the host as shown (ASCII, with a port if not the
    default one) and whether settings.TRANSCRIPTS_IMAGE_HOSTS names it."""

    url: str
    host: str
    listed: bool


def remote_image(url: Any) -> RemoteImage | None:
    """The remote image an http(s) URL points to (None for any other URL)."""
    if not is_http_url(url):
        return None
    url = str(url).strip()
    parts = urlsplit(url)
    try:
        name = (parts.hostname or "").encode("idna").decode("ascii")
        port = parts.port
    except (UnicodeError, ValueError):
        return None
    name = f"[{name}]" if ":" in name else name  # an IPv6 address
    default = 443 if parts.scheme.lower() == "https" else 80
    host = name if port in (None, default) else f"{name}:{port}"
    listed = host in _listed_hosts(tuple(settings.TRANSCRIPTS_IMAGE_HOSTS))
    return RemoteImage(url=url, host=host, listed=listed)


@lru_cache(maxsize=4)
def _listed_hosts(hosts: tuple[str, ...]) -> frozenset[str]:
    """The hosts of TRANSCRIPTS_IMAGE_HOSTS, lower-cased, as a set (built once per setting)."""
    return frozenset(host.lower() for host in hosts)


def remote_image_html(image: RemoteImage, alt: str) -> SafeString:
    """A remote image not loaded: its name and host, with a button that loads it (app.js) when
    its host is listed, else its URL as a link to open in a new tab."""
    note = format_html(
        '<span class="remote-image-note">{}<span class="muted">image from <strong>{}</strong>,'
        " not loaded</span></span>",
        f"{alt} · " if alt else "",
        image.host,
    )
    if image.listed:
        action = format_html(
            '<button type="button" class="btn btn-small remote-image-load" data-image-src="{}"'
            ' data-image-alt="{}">Load image from {}</button>',
            image.url,
            alt,
            image.host,
        )
    else:
        clipped = len(image.url) > URL_SHOWN_CHARS
        action = format_html(
            '<a class="remote-image-link" href="{}" target="_blank"'
            ' rel="noreferrer noopener">{}{}</a>',
            image.url,
            image.url[:URL_SHOWN_CHARS],
            "…" if clipped else "",
        )
    return format_html('<span class="remote-image">{} {}</span>', note, action)


def size_label(size: int) -> str:
    """A byte count for people: 612 bytes, 1.4 KB, 14 KB, 3.1 MB."""
    if size < 1024:
        return f"{size} byte{'' if size == 1 else 's'}"
    for unit, scale in (("KB", 1024), ("MB", 1024**2), ("GB", 1024**3)):
        value = size / scale
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{size} bytes"


# --- data as nested key/value lists ------------------------------------------------------


def data_view(value: Any, *, clip: bool = True) -> SafeString:
    """value as nested key/value lists: every string escaped, long strings folded unless not
    clip, size bounded."""
    budget = [DATA_VIEW_VALUES]
    return mark_safe(_data_html(value, 0, budget, clip))


def _data_html(value: Any, depth: int, budget: list[int], clip: bool) -> str:
    budget[0] -= 1
    if isinstance(value, (dict, list)) and not value:
        return '<span class="kv-empty">{}</span>'.format("{}" if isinstance(value, dict) else "[]")
    if isinstance(value, (dict, list)) and depth >= DATA_VIEW_DEPTH:
        return _string_html(json_preview(value, DATA_STRING_CLIP * 4), clip=clip)
    if isinstance(value, dict):
        rows = []
        for index, (key, item) in enumerate(value.items()):
            if budget[0] <= 0:
                rows.append(format_html('<div class="kv-more">… {} more</div>', len(value) - index))
                break
            child = mark_safe(_data_html(item, depth + 1, budget, clip))
            rows.append(format_html('<div class="kv-row"><dt>{}</dt><dd>{}</dd></div>', key, child))
        return '<dl class="kv">' + "".join(rows) + "</dl>"
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            if budget[0] <= 0:
                items.append(format_html('<li class="kv-more">… {} more</li>', len(value) - index))
                break
            items.append(
                format_html("<li>{}</li>", mark_safe(_data_html(item, depth + 1, budget, clip)))
            )
        return '<ol class="kv-list">' + "".join(items) + "</ol>"
    if isinstance(value, str):
        return _string_html(value, clip=clip)
    if value is None or isinstance(value, bool):
        return format_html('<span class="kv-literal">{}</span>', json.dumps(value))
    if isinstance(value, (int, float)):
        return format_html('<span class="kv-number">{}</span>', json.dumps(value))
    return _string_html(str(value), clip=clip)


def _string_html(text: str, *, clip: bool) -> str:
    """A string whole when short (or not clip), else its beginning with a toggle to show it all."""
    if not clip or (len(text) <= DATA_STRING_CLIP and text.count("\n") < 3):
        return format_html('<span class="kv-string">{}</span>', _truncate(text))
    clipped = text[:DATA_STRING_CLIP].split("\n")[0]
    return format_html(
        '<details class="kv-clip"><summary><span class="kv-string">{}…</span>'
        ' <span class="muted">{} characters</span></summary>'
        '<div class="kv-full">{}</div></details>',
        clipped,
        f"{len(text):,}",
        _truncate(text),
    )

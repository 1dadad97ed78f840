"""Write static/css/highlight.css: the Pygments token colours of the code blocks."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from pygments.formatters import HtmlFormatter

HEADER = "/* Pygments token colours: python manage.py highlight_css. */\n"
# The code block's background (app.css's --surface-2, light and dark): every token colour is
# moved towards the text colour until it reads at MIN_CONTRAST on it (WCAG 2.2 AA).
LIGHT_BACKGROUND, DARK_BACKGROUND = "#f1f1ee", "#222327"
MIN_CONTRAST = 4.5
HEX_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")
RGB = tuple[int, int, int]


def stylesheet_path() -> Path:
    """Where the stylesheet is committed."""
    return Path(settings.BASE_DIR) / "static" / "css" / "highlight.css"


def _rgb(colour: str) -> RGB:
    """#abc or #aabbcc as three 0-255 channels."""
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))


def _luminance(rgb: RGB) -> float:
    """WCAG's relative luminance."""
    linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(one: str, other: str) -> float:
    """WCAG's contrast ratio of two #hex colours."""
    high, low = sorted((_luminance(_rgb(one)), _luminance(_rgb(other))), reverse=True)
    return (high + 0.05) / (low + 0.05)


def readable(colour: str, background: str) -> str:
    """colour, or the nearest colour towards black or white reading at MIN_CONTRAST."""
    target = (0, 0, 0) if _luminance(_rgb(background)) > 0.18 else (255, 255, 255)
    rgb, candidate = _rgb(colour), colour
    for step in range(1, 21):
        if contrast(candidate, background) >= MIN_CONTRAST:
            break
        mixed = [round(c + (t - c) * step / 20) for c, t in zip(rgb, target, strict=True)]
        candidate = "#{:02x}{:02x}{:02x}".format(*mixed)
    return candidate


def _token_rules(style: str, background: str) -> str:
    """Only token colours, each readable on background: the page's CSS styles the block."""
    rules = HtmlFormatter(style=style).get_style_defs(".hl").splitlines()
    kept = (r for r in rules if r.startswith(".hl .") and "background" not in r)
    return "\n".join(
        HEX_COLOUR.sub(lambda m: readable(m.group(0), background), rule) for rule in kept
    )


def highlight_css() -> str:
    """The stylesheet for light and dark themes (Pygments' default and github-dark)."""
    dark = _token_rules("github-dark", DARK_BACKGROUND).replace("\n", "\n  ")
    light = _token_rules("default", LIGHT_BACKGROUND)
    return f"{HEADER}{light}\n@media (prefers-color-scheme: dark) {{\n  {dark}\n}}\n"


class Command(BaseCommand):
    help = "Write static/css/highlight.css from Pygments (with --check, only compare)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="fail if the committed file is out of date"
        )

    def handle(self, *args: str, check: bool, **options: object) -> None:
        path, css = stylesheet_path(), highlight_css()
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != css:
                raise CommandError(f"{path} is out of date: run manage.py highlight_css")
            return
        path.write_text(css, encoding="utf-8")
        self.stdout.write(f"Wrote {path}.")

"""Write static/css/highlight.css: the Pygments token colours of the code blocks."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from pygments.formatters import HtmlFormatter

HEADER = "/* Pygments token colours: python manage.py highlight_css. */\n"


def stylesheet_path() -> Path:
    """Where the stylesheet is committed."""
    return Path(settings.BASE_DIR) / "static" / "css" / "highlight.css"


def _token_rules(style: str) -> str:
    """Only token colours: the page's own CSS styles the block and its background."""
    rules = HtmlFormatter(style=style).get_style_defs(".hl").splitlines()
    return "\n".join(r for r in rules if r.startswith(".hl .") and "background" not in r)


def highlight_css() -> str:
    """The stylesheet for light and dark themes (Pygments' default and github-dark)."""
    dark = _token_rules("github-dark").replace("\n", "\n  ")
    light = _token_rules("default")
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

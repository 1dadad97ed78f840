"""The committed code-block stylesheet is what `manage.py highlight_css` writes."""

from __future__ import annotations

from django.core.management import call_command


def test_the_committed_highlight_css_is_up_to_date() -> None:
    call_command("highlight_css", "--check")

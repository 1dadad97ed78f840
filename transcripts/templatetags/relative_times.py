"""`{{ moment|ago }}`: a time in words ("just now", "5 minutes ago"), by transcripts.times."""

from __future__ import annotations

from datetime import datetime

from django import template

from transcripts.times import relative_time

register = template.Library()


@register.filter
def ago(moment: datetime | None) -> str:
    """How long ago moment was, in words ('' for no moment)."""
    return relative_time(moment) if moment is not None else ""

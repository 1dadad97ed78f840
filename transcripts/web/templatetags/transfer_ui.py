"""Template tags for the export menu."""

from __future__ import annotations

from django import template

from transcripts.formats import FORMATS

register = template.Library()


@register.simple_tag
def export_formats() -> list[tuple[str, str]]:
    """(key, label) of every format a thread can be exported to."""
    return [(key, spec.label) for key, spec in FORMATS.items() if spec.exporter is not None]

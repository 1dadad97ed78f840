"""`{% generator_availability as generators %}`: every generator, its models and whether it can
run on this server now (read from the settings and the environment, never the database)."""

from __future__ import annotations

from django import template

from transcripts.generation.generators import Availability, availability

register = template.Library()


@register.simple_tag
def generator_availability() -> list[Availability]:
    """Every generator with its models and why it cannot run ('' when it can), external last."""
    return availability()

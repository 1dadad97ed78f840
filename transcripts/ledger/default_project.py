"""The default project: where existing data went, and where demo data and unscoped imports go.
Created on first use (a fresh or flushed database has none)."""

from __future__ import annotations

from transcripts.models import DEFAULT_PROJECT_SLUG, Project


def default_project() -> Project:
    """The default project, created when it does not exist yet."""
    project, _ = Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default"}
    )
    return project

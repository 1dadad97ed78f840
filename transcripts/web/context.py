"""What the page header shows on every page: the project switcher and the links a role opens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from transcripts.models import Project
from transcripts.permissions import project_access
from transcripts.web.access import current_project, moderates_somewhere, user_projects


@dataclass
class Header:
    """The signed-in user's projects, the current one, and what the header links to."""

    projects: list[Project]
    current: Project | None
    # The moderation queue and (for staff) the admin: for moderators of some project.
    moderates: bool
    # The current project's audit log: for its moderators.
    audits_current: bool


def header_for(request: HttpRequest) -> Header:
    """The header of request's user (three small queries, only on full pages)."""
    if not request.user.is_authenticated:
        return Header(projects=[], current=None, moderates=False, audits_current=False)
    current = current_project(request)
    return Header(
        projects=user_projects(request),
        current=current,
        moderates=moderates_somewhere(request),
        audits_current=current is not None and project_access(request.user, current).can_moderate,
    )


def header(request: HttpRequest) -> dict[str, Any]:
    """The `header` of every template, read only when a template uses it (htmx fragments don't)."""
    return {"header": SimpleLazyObject(lambda: header_for(request))}

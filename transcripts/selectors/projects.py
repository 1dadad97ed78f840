"""Reads of a project's page: its members, its API tokens, its audit log, and accounts."""

from __future__ import annotations

from django.contrib.auth.models import User as AuthUser

from transcripts.models import ApiToken, AuditRecord, Membership, Project
from transcripts.pagination import Keyset, Position
from transcripts.selectors.pages import keyset_page

# The audit log: newest first.
NEWEST_FIRST = Keyset("created_at", desc=True)


def members_of(project: Project) -> list[Membership]:
    """The project's memberships with their users."""
    return list(Membership.objects.filter(project=project).select_related("user"))


def tokens_of(project: Project) -> list[ApiToken]:
    """The project's API tokens: live ones first, newest first."""
    return list(ApiToken.objects.filter(project=project).order_by("revoked_at", "-created_at"))


def audit_page(project: Project, *, after: Position | None, limit: int) -> list[AuditRecord]:
    """Up to limit audit records of project, newest first, after the (createdAt, id) cursor."""
    records = AuditRecord.objects.filter(project=project)
    return keyset_page(records, NEWEST_FIRST, after=after, limit=limit)


def active_user(username: str) -> AuthUser | None:
    """The active account with this username, or None."""
    return AuthUser.objects.filter(username=username, is_active=True).first()

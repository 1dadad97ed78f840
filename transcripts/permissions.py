"""Who may do what: the one policy behind the pages, the API, the admin and the services.

A user holds a role on the threads they can reach; each role includes the ones below it.
`web/access.py` and `api/access.py` turn this policy into 404s and 403s for requests; the
services in `ledger/` check it again before they write.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from django.contrib.auth.models import AnonymousUser, Group, Permission
from django.contrib.auth.models import User as AuthUser

User = AuthUser | AnonymousUser


class Role(IntEnum):
    """What a member may do; a higher role includes every lower one."""

    VIEWER = 1  # read, report
    EDITOR = 2  # + regenerate, edit, reply, stop, retry, restore, rate, import
    MODERATOR = 3  # + hide, lock, flag, the reports queue, the audit log
    ADMIN = 4  # + redact, delete, tokens


@dataclass(frozen=True)
class Access:
    """One user's rights on one thread (or on the threads they can reach)."""

    role: Role | None
    sees_hidden: bool = False

    @property
    def can_read(self) -> bool:
        """Read the thread, its runs and its events; report a message."""
        return self.role is not None

    @property
    def can_edit(self) -> bool:
        """Regenerate, edit, reply, stop, retry, restore, rate and import."""
        return self.role is not None and self.role >= Role.EDITOR

    @property
    def can_moderate(self) -> bool:
        """Hide, lock, flag; handle reports; read the audit log."""
        return self.role is not None and self.role >= Role.MODERATOR

    @property
    def can_administer(self) -> bool:
        """Redact and delete."""
        return self.role is not None and self.role >= Role.ADMIN


NO_ACCESS = Access(role=None)


def user_access(user: Any) -> Access:
    """The user's rights: superusers and holders of `redact` administer, holders of
    `moderate` moderate, every other active account edits; staff also see hidden threads."""
    if user is None or not user.is_authenticated or not user.is_active:
        return NO_ACCESS
    if user.is_superuser or user.has_perm("transcripts.redact"):
        role = Role.ADMIN
    elif user.has_perm("transcripts.moderate"):
        role = Role.MODERATOR
    else:
        role = Role.EDITOR
    return Access(role=role, sees_hidden=bool(user.is_staff))


# --- groups (the roles above as Django groups an administrator assigns) ---

GROUPS = {
    "Viewers": ["view_thread", "view_run", "view_message", "view_event"],
    "Moderators": [
        "view_thread",
        "view_run",
        "view_message",
        "view_event",
        "view_auditrecord",
        "view_report",
        "change_report",
        "moderate",
    ],
    "Admins": [
        "view_thread",
        "view_run",
        "view_message",
        "view_event",
        "view_auditrecord",
        "view_report",
        "change_report",
        "delete_thread",
        "view_apitoken",
        "add_apitoken",
        "change_apitoken",
        "moderate",
        "redact",
    ],
}


def ensure_groups() -> None:
    """Create the Viewers, Moderators and Admins groups with their permissions."""
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        perms = Permission.objects.filter(
            content_type__app_label="transcripts", codename__in=codenames
        )
        group.permissions.add(*perms)

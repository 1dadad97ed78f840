"""The audit log: who did what to which object, when and why (records outlive their targets)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User as AuthUser
from django.utils import timezone

from transcripts.jsonvalue import JsonValue
from transcripts.models import (
    AnnotationQueue,
    ApiToken,
    AuditRecord,
    Membership,
    Message,
    Project,
    Report,
    Run,
    Score,
    ScoreConfig,
    ShareLink,
    Thread,
)
from transcripts.permissions import Principal, User

# An API client pages, polls and reconnects: one record per caller and thread in this window.
API_READ_WINDOW = timedelta(minutes=10)


def _project_id_of(thread_id: str) -> int | None:
    if not thread_id:
        return None
    return Thread.objects.filter(pk=thread_id).values_list("project_id", flat=True).first()


def record_audit(
    user: User,
    action: str,
    target: Thread
    | Message
    | Report
    | Run
    | Project
    | Membership
    | ApiToken
    | ShareLink
    | Score
    | ScoreConfig
    | AnnotationQueue,
    *,
    thread_id: str = "",
    project: Project | None = None,
    reason: str = "",
    **details: JsonValue,
) -> AuditRecord:
    """Record that user did action to target (call it inside the action's transaction).

    The record belongs to the project of thread_id (or project), so the project's moderators
    find it in its audit log.
    """
    actor = user if user.is_authenticated else None
    return AuditRecord.objects.create(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        action=action,
        target_type=type(target).__name__.lower(),
        target_id=str(target.pk),
        thread_id=thread_id,
        project_id=project.pk if project is not None else _project_id_of(thread_id),
        reason=reason,
        details=details,
    )


def record_system_audit(
    action: str, project: Project, *, reason: str = "", **details: JsonValue
) -> AuditRecord:
    """Record what the system itself did to a project (retention purges)."""
    return AuditRecord.objects.create(
        actor=None,
        actor_name="system",
        action=action,
        target_type="project",
        target_id=str(project.pk),
        project=project,
        reason=reason,
        details=details,
    )


def record_hidden_view(*, user: User, thread: Thread) -> None:
    """Staff reading a hidden thread is itself recorded."""
    if thread.hidden:
        record_audit(user, "view_hidden", thread, thread_id=thread.id)


def record_hidden_api_read(*, principal: Principal, thread_id: str, path: str) -> None:
    """Staff reading a hidden thread through the API (a token or a session) is recorded."""
    since = timezone.now() - API_READ_WINDOW
    caller = {"via": "api", "caller": principal.name, "tokenId": principal.token_id}
    recent = AuditRecord.objects.filter(
        action="view_hidden",
        target_type="thread",
        target_id=thread_id,
        created_at__gte=since,
        details__contains=caller,
    )
    if recent.exists():
        return
    actor = None
    if principal.token_id is not None:
        actor = AuthUser.objects.filter(apitoken__pk=principal.token_id).first()
    else:
        actor = AuthUser.objects.filter(username=principal.name).first()
    AuditRecord.objects.create(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else principal.name,
        action="view_hidden",
        target_type="thread",
        target_id=thread_id,
        thread_id=thread_id,
        project_id=_project_id_of(thread_id),
        details={**caller, "path": path[:500]},
    )


def record_login_lockout(
    *, username: str, ip_address: str, path: str, within: timedelta
) -> AuditRecord | None:
    """Record that too many failed logins from ip_address locked username out (django-axes's
    lockout, on the login page at path), once per lockout: attempts during a lockout already
    recorded (within the cool-off) add nothing. The one who tried is known only by address."""
    details = {"username": username[:150], "ipAddress": ip_address}
    recent = AuditRecord.objects.filter(
        action="login_locked_out",
        created_at__gte=timezone.now() - within,
        details__contains=details,
    )
    if recent.exists():
        return None
    account = AuthUser.objects.filter(username=username).first() if username else None
    return AuditRecord.objects.create(
        actor=None,
        actor_name=ip_address[:150],
        action="login_locked_out",
        target_type="user",
        target_id=str(account.pk) if account is not None else username[:64],
        details={**details, "path": path[:500]},
    )

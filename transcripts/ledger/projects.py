"""Projects and their members: created, joined, changed and left, each step audited."""

from __future__ import annotations

from django.contrib.auth.models import User as AuthUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from transcripts.errors import Conflict, InvalidInput, NotFound
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import account_of, require
from transcripts.models import Membership, Profile, Project, ProjectRole
from transcripts.permissions import User, forget_roles, project_access

MAX_RETENTION_DAYS = 36_500


def _check_slug(slug: str) -> str:
    slug = (slug or "").strip()
    try:
        validate_slug(slug)
    except ValidationError:
        raise InvalidInput(
            "a project's slug is letters, digits, hyphens and underscores", field="slug"
        ) from None
    if len(slug) > 50:
        raise InvalidInput("a project's slug has at most 50 characters", field="slug")
    return slug


def _check_retention(days: int | None) -> int | None:
    if days is None:
        return None
    if type(days) is not int or not 1 <= days <= MAX_RETENTION_DAYS:
        raise InvalidInput(
            f"retention is a number of days from 1 to {MAX_RETENTION_DAYS}, or none",
            field="retentionDays",
        )
    return days


def _check_role(role: str) -> str:
    if role not in ProjectRole.values:
        raise InvalidInput(
            f"role must be one of {', '.join(ProjectRole.values)}", field="role", role=role
        )
    return role


def get_project(slug: str) -> Project:
    """The project called slug, or NotFound."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound(f"project {slug} does not exist", slug=slug)
    return project


def create_project(
    *, slug: str, name: str = "", retention_days: int | None = None, actor: User | None = None
) -> Project:
    """A new project (Conflict when the slug is taken)."""
    slug = _check_slug(slug)
    name = (name or slug).strip()[:200]
    retention_days = _check_retention(retention_days)
    try:
        with transaction.atomic():
            project = Project.objects.create(slug=slug, name=name, retention_days=retention_days)
            if actor is not None:
                record_audit(actor, "create_project", project, project=project)
    except IntegrityError:
        raise Conflict(f"a project called {slug} exists already", slug=slug) from None
    return project


def set_member(
    *, project: Project, user: AuthUser, role: str, actor: User | None = None
) -> Membership:
    """Make user a member of project with role (or change their role); actor must administer
    the project unless None (the command line, the demo)."""
    role = _check_role(role)
    if actor is not None:
        require(project_access(actor, project).can_administer, "manage members")
    with transaction.atomic():
        if role != ProjectRole.ADMIN:
            keep_an_admin(project=project, leaving=user)
        membership, created = Membership.objects.update_or_create(
            project=project, user=user, defaults={"role": role}
        )
        if actor is not None:
            action = "add_member" if created else "change_role"
            record_audit(
                actor, action, membership, project=project, member=user.get_username(), role=role
            )
    forget_roles(user)
    return membership


def remove_member(*, project: Project, user: AuthUser, actor: User) -> None:
    """Take user out of project."""
    require(project_access(actor, project).can_administer, "manage members")
    with transaction.atomic():
        membership = Membership.objects.filter(project=project, user=user).first()
        if membership is None:
            raise NotFound("not a member of this project", member=user.get_username())
        keep_an_admin(project=project, leaving=user)
        record_audit(
            actor, "remove_member", membership, project=project, member=user.get_username()
        )
        membership.delete()
    forget_roles(user)


def keep_an_admin(*, project: Project, leaving: AuthUser) -> None:
    """Conflict when leaving is the project's last admin: a project nobody administers could only
    be managed by a superuser. Locks the admins' rows (until the caller's transaction ends) so two
    admins demoting each other at once cannot both succeed."""
    with transaction.atomic():
        admins = list(
            Membership.objects.select_for_update()
            .filter(project=project, role=ProjectRole.ADMIN)
            .values_list("user_id", flat=True)
        )
    if admins == [leaving.pk]:
        raise Conflict(
            "a project keeps at least one admin: make another member admin first",
            member=leaving.get_username(),
        )


def rename_project(*, project: Project, name: str, actor: User | None = None) -> Project:
    """Give project a new name; its slug stays (links and scripts use it)."""
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise InvalidInput("a project's name has between 1 and 200 characters", field="name")
    if actor is not None:
        require(project_access(actor, project).can_administer, "rename the project")
    with transaction.atomic():
        previous = (
            Project.objects.select_for_update().values_list("name", flat=True).get(pk=project.pk)
        )
        project.name = name
        if previous != name:
            Project.objects.filter(pk=project.pk).update(name=name)
            if actor is not None:
                record_audit(
                    actor, "rename_project", project, project=project, name=name, previous=previous
                )
    return project


def set_retention(*, project: Project, days: int | None, actor: User | None = None) -> Project:
    """Delete the project's threads with no activity for days (None: keep forever)."""
    days = _check_retention(days)
    if actor is not None:
        require(project_access(actor, project).can_administer, "change retention")
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(retention_days=days)
        project.retention_days = days
        if actor is not None:
            record_audit(actor, "set_retention", project, project=project, retentionDays=days)
    return project


def choose_project(*, user: User, project: Project) -> None:
    """Remember the project the pages show a signed-in user (one they can read)."""
    account = account_of(user)
    require(account is not None and project_access(user, project).can_read, "open this project")
    Profile.objects.update_or_create(user=account, defaults={"current_project": project})

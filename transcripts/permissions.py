"""Who may do what: the one policy behind the pages, the API, the admin and the services.

Every thread belongs to a project. A user's role in that project (viewer < editor < moderator
< admin, each including the ones below) decides what they may do; superusers may do everything
everywhere; everyone else is an outsider and gets 404s. An API token belongs to one project and
carries scopes (`read`, `ingest`, `admin`) instead of a role. `web/access.py` and
`api/access.py` turn this policy into 404s and 403s for requests; the services in `ledger/`
check it again before they write.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import IntEnum

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.db.models import Q, QuerySet

from transcripts.errors import PermissionDenied
from transcripts.models import Membership, Project, Run, RunOrigin, Thread

User = AuthUser | AnonymousUser


class Role(IntEnum):
    """What a member may do; a higher role includes every lower one."""

    VIEWER = 1  # read, report
    EDITOR = 2  # + regenerate, edit, reply, stop, retry, restore, rate, import
    MODERATOR = 3  # + hide, lock, flag, the reports queue, the project's audit log
    ADMIN = 4  # + redact, delete, tokens, members, retention

    @classmethod
    def named(cls, name: str) -> Role:
        """The role called name ("viewer", "editor", "moderator", "admin")."""
        return cls[name.upper()]

    @property
    def label(self) -> str:
        """The role's name as people write it."""
        return self.name.lower()


@dataclass(frozen=True)
class Access:
    """One user's rights in one project (None: an outsider)."""

    role: Role | None

    @property
    def can_read(self) -> bool:
        """Read threads, runs and events; report a message."""
        return self.role is not None

    @property
    def sees_hidden(self) -> bool:
        """Read threads hidden by moderation."""
        return self.role is not None and self.role >= Role.MODERATOR

    @property
    def can_edit(self) -> bool:
        """Regenerate, edit, reply, stop, retry, restore, rate and import."""
        return self.role is not None and self.role >= Role.EDITOR

    @property
    def can_moderate(self) -> bool:
        """Hide, lock, flag; handle reports; read the project's audit log."""
        return self.role is not None and self.role >= Role.MODERATOR

    @property
    def can_administer(self) -> bool:
        """Redact, delete; manage tokens, members and retention."""
        return self.role is not None and self.role >= Role.ADMIN

    def require(self, allowed: bool, action: str) -> None:
        """PermissionDenied saying which role action needs, unless allowed."""
        if not allowed:
            have = self.role.label if self.role is not None else "no role"
            raise PermissionDenied(
                f"you may not {action}: your role in this project is {have}", action=action
            )


NO_ACCESS = Access(role=None)
SUPERUSER = Access(role=Role.ADMIN)

_CACHE = "_transcripts_roles"


def roles_of(user: User | None) -> dict[int, Role]:
    """project id -> the user's role there (read once per user object, i.e. per request)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return {}
    cached = getattr(user, _CACHE, None)
    if cached is None:
        rows = Membership.objects.filter(user_id=user.pk).values_list("project_id", "role")
        cached = {project_id: Role.named(role) for project_id, role in rows}
        setattr(user, _CACHE, cached)
    return dict(cached)


def forget_roles(user: User | None) -> None:
    """Drop the cached roles (after a membership changed)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def is_superuser(user: User | None) -> bool:
    """An active superuser, who may do everything everywhere."""
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)


def project_access(user: User | None, project: Project | int) -> Access:
    """The user's rights in project."""
    if is_superuser(user):
        return SUPERUSER
    project_id = project.pk if isinstance(project, Project) else project
    return Access(role=roles_of(user).get(project_id))


def member_access(user: User | None, *, thread_id: str) -> Access:
    """The user's rights in the project of a thread, hidden or not (for the services, which
    act on hidden threads too: a moderator unhides one)."""
    if is_superuser(user):
        return SUPERUSER
    project_id = Thread.objects.filter(pk=thread_id).values_list("project_id", flat=True).first()
    return NO_ACCESS if project_id is None else project_access(user, project_id)


def thread_access(user: User | None, thread: Thread) -> Access:
    """The user's rights on thread: those of its project, none on a hidden one they can't see."""
    access = project_access(user, thread.project_id)
    if thread.hidden and not access.sees_hidden:
        return NO_ACCESS
    return access


def project_ids(user: User | None, *, at_least: Role = Role.VIEWER) -> list[int] | None:
    """Ids of the projects where the user holds at_least; None means every project."""
    if is_superuser(user):
        return None
    return sorted(p for p, role in roles_of(user).items() if role >= at_least)


def projects_of(user: User | None, *, at_least: Role = Role.VIEWER) -> QuerySet[Project]:
    """The projects where the user holds at_least (every project for a superuser)."""
    ids = project_ids(user, at_least=at_least)
    projects = Project.objects.all()
    return projects if ids is None else projects.filter(pk__in=ids)


def readable_threads(
    user: User | None, *, project: Project | int | None = None
) -> QuerySet[Thread]:
    """Threads the user may read (in project, if given): hidden ones only where they moderate."""
    threads = Thread.objects.all()
    if project is not None:
        threads = threads.filter(project_id=project.pk if isinstance(project, Project) else project)
    if is_superuser(user):
        return threads
    roles = roles_of(user)
    members = [p for p in roles]
    moderated = [p for p, role in roles.items() if role >= Role.MODERATOR]
    return threads.filter(Q(project_id__in=members), Q(hidden=False) | Q(project_id__in=moderated))


# --- tokens ----------------------------------------------------------------------------------

INGEST, READ, ADMIN = "ingest", "read", "admin"


@dataclass(frozen=True)
class Principal:
    """An authenticated API caller: a token (its project and scopes) or a browser session (its
    user). `api/auth.py` finds it; the policy below and the ledger's audit read it."""

    name: str
    scopes: frozenset[str]
    token_id: int | None = None
    project_id: int | None = None
    user: User | None = None
    # The token's project's own quotas (requests, events a minute; None: the defaults), read
    # with the token so that charging its events needs no second read.
    project_limits: tuple[int | None, int | None] | None = None

    @property
    def is_session(self) -> bool:
        """Whether the caller is a logged-in browser session rather than a token."""
        return self.token_id is None


@dataclass(frozen=True)
class TokenAccess:
    """An API token's rights on one thread: none outside its project."""

    in_project: bool
    scopes: frozenset[str]

    @property
    def can_read(self) -> bool:
        """Read content (threads, messages, events, exports)."""
        return self.in_project and bool(self.scopes & {READ, ADMIN})

    @property
    def can_ingest(self) -> bool:
        """Create threads and runs, append events, commit and fail runs, import."""
        return self.in_project and bool(self.scopes & {INGEST, ADMIN})

    @property
    def sees_hidden(self) -> bool:
        """Reach threads hidden by moderation."""
        return self.in_project and ADMIN in self.scopes

    @property
    def is_admin(self) -> bool:
        """Act as an admin of the project (stop any run, restore any branch)."""
        return self.in_project and ADMIN in self.scopes


def token_access(token_project_id: int, scopes: Collection[str], thread: Thread) -> TokenAccess:
    """A token's rights on thread; a hidden thread is out of reach without the admin scope."""
    access = TokenAccess(thread.project_id == token_project_id, frozenset(scopes))
    if thread.hidden and not access.sees_hidden:
        return TokenAccess(False, access.scopes)
    return access


def may_stop(
    run: Run, *, user_access: Access | None = None, token: TokenAccess | None = None
) -> bool:
    """Whether a member (user_access) or a token may stop run.

    A run started in the browser is stopped by an editor of its project; an agent's run by a
    token of its project. A project admin (member or admin-scoped token) may stop either.
    """
    if user_access is not None:
        if run.origin == RunOrigin.API:
            return user_access.can_administer
        return user_access.can_edit
    if token is not None:
        if run.origin == RunOrigin.API:
            return token.can_ingest
        return token.is_admin
    return False

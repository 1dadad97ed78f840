"""Who may see and do what on the pages: the one place web/ turns the policy into 404s and 403s.

Every view finds its project, thread, message, run, report or import job here, and every answer
comes from `transcripts.permissions`: what lies outside the user's projects (or is hidden from
them) does not exist for them (404, never 403, which would confirm it exists), and a member
whose role is too low gets a 403 that names the role the action needs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.decorators import login_required as django_login_required
from django.contrib.auth.views import redirect_to_login
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django_htmx.http import HttpResponseClientRedirect

from transcripts.errors import DomainError, PermissionDenied
from transcripts.ids import is_ulid
from transcripts.models import (
    OPEN_STATUSES,
    ApiToken,
    ImportJob,
    Membership,
    Message,
    Profile,
    Project,
    Report,
    Run,
    Thread,
)
from transcripts.permissions import (
    Access,
    Role,
    may_stop,
    project_access,
    project_ids,
    projects_of,
    readable_threads,
    thread_access,
)
from transcripts.web.http import HtmxHttpRequest, refusal

_View = TypeVar("_View", bound=Callable[..., HttpResponse])


def login_required(view: _View) -> _View:
    """Every page's door: Django's login_required, and refusals rendered as a page or fragment.

    An htmx request whose session ended reloads into the login page (a plain redirect would be
    followed by htmx and the login page swapped into the fragment). A refusal raised by the
    view or the services it calls (a 403 naming the role needed, a locked thread, bad input)
    is answered with its status, as a page or, for htmx, a fragment its form shows.
    """
    guarded = django_login_required(view)

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.htmx and not request.user.is_authenticated:
            page = request.htmx.current_url_abs_path or request.get_full_path()
            return HttpResponseClientRedirect(redirect_to_login(page).url)
        try:
            return guarded(request, *args, **kwargs)
        except DomainError as exc:
            return refusal(request, exc.message, exc.status)

    return cast(_View, wrapper)


# --- roles ---------------------------------------------------------------------------------


def require_role(access: Access, needed: Role, action: str) -> None:
    """A 403 naming the role action needs (and the one the user has), unless access holds it."""
    if access.role is None or access.role < needed:
        have = access.role.label if access.role is not None else "no role"
        raise PermissionDenied(
            f"To {action} you need the {needed.label} role in this project; yours is {have}.",
            action=action,
            needed=needed.label,
        )


def require_stop(run: Run, access: Access) -> None:
    """A 403 unless the user may stop run (`permissions.may_stop`), saying who may."""
    if may_stop(run, user_access=access):
        return
    if access.role is not None and access.can_edit:
        raise PermissionDenied(
            "This run was started by an agent through the API: to stop it you need the admin "
            f"role in this project (or a token of the project); yours is {access.role.label}.",
            action="stop a run",
            needed=Role.ADMIN.label,
        )
    require_role(access, Role.EDITOR, "stop a run")


# --- projects ------------------------------------------------------------------------------

_CURRENT = "_transcripts_current_project"


def current_project(request: HttpRequest) -> Project | None:
    """The project the list and search show: the remembered one while the user can read it,
    else the first they can read (None: they belong to no project). Read once per request."""
    if hasattr(request, _CURRENT):
        return cast(Project | None, getattr(request, _CURRENT))
    user = request.user
    chosen = None
    if user.is_authenticated:
        profile = Profile.objects.filter(user_id=user.pk).select_related("current_project").first()
        remembered = profile.current_project if profile is not None else None
        if remembered is not None and project_access(user, remembered).can_read:
            chosen = remembered
        else:
            chosen = projects_of(user).first()
    setattr(request, _CURRENT, chosen)
    return chosen


def user_projects(request: HttpRequest) -> list[Project]:
    """The projects the user may switch to (every project for a superuser)."""
    return list(projects_of(request.user))


def moderates_somewhere(request: HttpRequest) -> bool:
    """Whether the user is a moderator (or admin) of at least one project."""
    moderated = project_ids(request.user, at_least=Role.MODERATOR)
    return moderated is None or bool(moderated)


def get_project_for_user(request: HttpRequest, slug: str) -> tuple[Project, Access]:
    """The project called slug and the user's rights there, or a 404 for a non-member."""
    project = Project.objects.filter(slug=slug).first()
    access = project_access(request.user, project) if project is not None else None
    if project is None or access is None or not access.can_read:
        raise Http404("no such project")
    return project, access


def get_member_for_admin(project: Project, user_id: int) -> Membership:
    """A membership of project (whose admin get_project_for_user vouched for), or a 404."""
    membership = (
        Membership.objects.select_related("user").filter(project=project, user_id=user_id).first()
    )
    if membership is None:
        raise Http404("no such member")
    return membership


def get_token_for_admin(project: Project, token_id: int) -> ApiToken:
    """A token of project (whose admin get_project_for_user vouched for), or a 404: another
    project's token does not exist here."""
    token = ApiToken.objects.filter(project=project, pk=token_id).first()
    if token is None:
        raise Http404("no such token")
    return token


# --- threads, messages, runs ---------------------------------------------------------------


def threads_for_user(request: HttpRequest, project: Project) -> tuple[QuerySet[Thread], Access]:
    """The threads of project the user may see (hidden ones where they moderate), and their
    rights there."""
    return readable_threads(request.user, project=project), project_access(request.user, project)


def get_thread_for_user(request: HttpRequest, thread_id: str) -> tuple[Thread, Access]:
    """The thread (of any project the user reads) with its head's depth, its project and any
    open run (`open_run_id`), and the user's rights on it; or a 404."""
    if not is_ulid(thread_id):
        raise Http404("no such thread")
    open_runs = Run.objects.filter(thread_id=OuterRef("pk"), status__in=OPEN_STATUSES)
    thread = (
        readable_threads(request.user)
        .select_related("head", "project")
        .only(
            "id",
            "project_id",
            "title",
            "metadata",
            "agents",
            "hidden",
            "locked",
            "archived",
            "created_at",
            "updated_at",
            "head__id",
            "head__depth",
            "project__slug",
            "project__name",
        )
        .annotate(open_run_id=Subquery(open_runs.order_by("-id").values("id")[:1]))
        .filter(pk=thread_id)
        .first()
    )
    if thread is None:
        raise Http404("no such thread")
    return thread, thread_access(request.user, thread)


def message_of(thread: Thread, message_id: str) -> Message:
    """A message of a thread the user may see (from get_thread_for_user), or a 404."""
    if not is_ulid(message_id):
        raise Http404("no such message")
    message = Message.objects.defer("search").filter(pk=message_id, thread=thread).first()
    if message is None:
        raise Http404("no such message")
    message.thread = thread
    return message


def get_message_for_user(
    request: HttpRequest, thread_id: str, message_id: str
) -> tuple[Message, Access]:
    """The message of the thread (its `thread` the one get_thread_for_user gives), or a 404."""
    thread, access = get_thread_for_user(request, thread_id)
    return message_of(thread, message_id), access


def get_run_for_user(
    request: HttpRequest, run_id: str, *, runs: QuerySet[Run] | None = None
) -> tuple[Run, Access]:
    """The run, with its thread, if the user may see that thread, and their rights on it; or a
    404. runs narrows or annotates what is loaded (default: without the snapshot, which can be
    as large as the run)."""
    if not is_ulid(run_id):
        raise Http404("no such run")
    if runs is None:
        runs = Run.objects.select_related("thread").defer("snapshot")
    run = runs.filter(pk=run_id, thread__in=readable_threads(request.user)).first()
    if run is None:
        raise Http404("no such run")
    return run, thread_access(request.user, run.thread)


# --- reports -------------------------------------------------------------------------------


def moderated_project_ids(request: HttpRequest) -> list[int] | None:
    """The projects whose reports the user handles (None: all); a 403 when there are none."""
    moderated = project_ids(request.user, at_least=Role.MODERATOR)
    if moderated is not None and not moderated:
        raise PermissionDenied(
            "To see the moderation queue you need the moderator role in a project.",
            needed=Role.MODERATOR.label,
        )
    return moderated


def get_report_for_moderator(request: HttpRequest, report_id: int) -> Report:
    """A report of a thread the user may read, if they moderate its project: a 404 for anyone
    else, a 403 for a member of the project without the moderator role."""
    report = (
        Report.objects.select_related("thread")
        .filter(pk=report_id, thread__in=readable_threads(request.user))
        .first()
    )
    if report is None:
        raise Http404("no such report")
    require_role(thread_access(request.user, report.thread), Role.MODERATOR, "handle reports")
    return report


# --- import jobs ---------------------------------------------------------------------------


def import_jobs_for_user(request: HttpRequest) -> QuerySet[ImportJob]:
    """The import jobs the user started, in projects they can still read."""
    if request.user.pk is None:
        return ImportJob.objects.none()
    jobs = ImportJob.objects.filter(user_id=request.user.pk)
    readable = project_ids(request.user)
    return jobs if readable is None else jobs.filter(project_id__in=readable)


def get_import_job_for_user(request: HttpRequest, job_id: str) -> ImportJob:
    """One of the user's import jobs, or a 404 (someone else's job does not exist for them)."""
    job = import_jobs_for_user(request).filter(pk=job_id).first() if is_ulid(job_id) else None
    if job is None:
        raise Http404("no such import")
    return job

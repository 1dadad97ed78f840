"""Who may see and do what on the pages: the one place web/ turns the policy into 404s and 403s.

Every view finds its thread, message, run, report or import job here. What a user may do comes
from `transcripts.permissions.user_access`; an object the user may not see does not exist for
them (404), and a member who may see but not act gets a 403 that says why.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.decorators import login_required as django_login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django_htmx.http import HttpResponseClientRedirect

from transcripts.ids import is_ulid
from transcripts.models import OPEN_STATUSES, ImportJob, Message, Report, Run, Thread
from transcripts.permissions import (
    Access,
    Role,
    highest_access,
    project_ids,
    readable_threads,
    thread_access,
)
from transcripts.web.http import HtmxHttpRequest

_View = TypeVar("_View", bound=Callable[..., HttpResponse])


def login_required(view: _View) -> _View:
    """Django's login_required; an htmx request whose session ended reloads into the login page.

    A plain redirect would be followed by htmx and the login page swapped into the fragment.
    """
    guarded = django_login_required(view)

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.htmx and not request.user.is_authenticated:
            page = request.htmx.current_url_abs_path or request.get_full_path()
            return HttpResponseClientRedirect(redirect_to_login(page).url)
        return guarded(request, *args, **kwargs)

    return cast(_View, wrapper)


def access_for(request: HttpRequest) -> Access:
    """What the request's user may do where they may do the most."""
    return highest_access(request.user)


def require(allowed: bool, message: str) -> None:
    """A 403 with message unless allowed: for a member who may see something but not act."""
    if not allowed:
        raise PermissionDenied(message)


def threads_for_user(request: HttpRequest) -> tuple[QuerySet[Thread], Access]:
    """The threads the user may see (hidden ones only when the access says so)."""
    return readable_threads(request.user), access_for(request)


def get_thread_for_user(request: HttpRequest, thread_id: str) -> tuple[Thread, Access]:
    """The thread with its head's depth and any open run (`open_run_id`), or a 404."""
    if not is_ulid(thread_id):
        raise Http404("no such thread")
    threads, _ = threads_for_user(request)
    open_runs = Run.objects.filter(thread_id=OuterRef("pk"), status__in=OPEN_STATUSES)
    thread = (
        threads.select_related("head")
        .only(
            "id",
            "project_id",
            "title",
            "metadata",
            "agents",
            "hidden",
            "locked",
            "created_at",
            "updated_at",
            "head__id",
            "head__depth",
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
    """The run, with its thread, if the user may see that thread, or a 404.

    runs narrows or annotates what is loaded (default: without the snapshot, which can be as
    large as the run).
    """
    if not is_ulid(run_id):
        raise Http404("no such run")
    if runs is None:
        runs = Run.objects.select_related("thread").defer("snapshot")
    run = runs.filter(pk=run_id, thread__in=readable_threads(request.user)).first()
    if run is None:
        raise Http404("no such run")
    return run, thread_access(request.user, run.thread)


def require_moderator(request: HttpRequest) -> Access:
    """The access of a staff member who moderates, else a 403."""
    access = access_for(request)
    require(
        bool(request.user.is_staff) and access.can_moderate,
        "only moderators see the moderation queue",
    )
    return access


def get_report_for_moderator(request: HttpRequest, report_id: int) -> Report:
    """A report, for a moderator (403 for anyone else), or a 404."""
    require_moderator(request)
    moderated = project_ids(request.user, at_least=Role.MODERATOR)
    reports = Report.objects.all()
    if moderated is not None:
        reports = reports.filter(thread__project_id__in=moderated)
    report = reports.filter(pk=report_id).first()
    if report is None:
        raise Http404("no such report")
    return report


def import_jobs_for_user(request: HttpRequest) -> QuerySet[ImportJob]:
    """The import jobs the user started (each user sees only their own)."""
    if not access_for(request).can_read or request.user.pk is None:
        return ImportJob.objects.none()
    return ImportJob.objects.filter(user_id=request.user.pk)


def get_import_job_for_user(request: HttpRequest, job_id: str) -> ImportJob:
    """One of the user's import jobs, or a 404 (someone else's job does not exist for them)."""
    job = import_jobs_for_user(request).filter(pk=job_id).first() if is_ulid(job_id) else None
    if job is None:
        raise Http404("no such import")
    return job

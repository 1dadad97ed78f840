"""Who reaches what through the API: one decision for every router and the live stream.

`rights` is that decision: for a token, `permissions.token_access` (its project, its scopes,
hidden threads only with `admin`); for a browser session, `permissions.thread_access` of its
user, read-only. A thread, and so its runs, events and messages, exists for the caller only
where `rights` says so: elsewhere it is NotFound, exactly as an unknown id, so nothing
confirms that it exists. Once reached, the scopes decide (403 naming the missing scope).
Everything else here applies that one decision: to a thread, to a run (also as a single
small query for the append path), to import jobs, and to querysets of threads and runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from django.core.validators import slug_re
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from transcripts import permissions
from transcripts.errors import InvalidInput, NotFound, PermissionDenied
from transcripts.ids import is_ulid
from transcripts.ledger import Reach, moderation
from transcripts.models import ImportJob, Project, Run, Score, Thread
from transcripts.permissions import ADMIN, INGEST, READ, Principal, TokenAccess

_Row = TypeVar("_Row", bound=Model)


_LARGEST_ROW = 2**63 - 1


def row_id(text: str, name: str, what: str) -> int:
    """The row id a path parameter names (queueId, itemId, configId): anything but a number a
    row can have is NotFound, as an id of no row (never a 422 or a database error)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or int(text) > _LARGEST_ROW:
        raise NotFound(f"{what} {text!r} does not exist", **{name: text})
    return int(text)


def caller(request: HttpRequest) -> Principal:
    """The principal the auth class attached to request."""
    principal = getattr(request, "auth", None)
    assert isinstance(principal, Principal)
    return principal


def rights(principal: Principal, thread: Thread) -> TokenAccess:
    """What principal may do with thread (reads thread.project_id and thread.hidden only).

    A browser session holds the read scope wherever its user may read the thread.
    """
    if principal.project_id is None:
        readable = permissions.thread_access(principal.user, thread).can_read
        return TokenAccess(in_project=readable, scopes=principal.scopes)
    return permissions.token_access(principal.project_id, principal.scopes, thread)


def _own_project_rights(principal: Principal) -> TokenAccess:
    """principal's rights on what is in its own project, before any thread is reached."""
    return TokenAccess(in_project=True, scopes=principal.scopes)


def _lacking(access: TokenAccess, needs: Iterable[str]) -> str | None:
    """The first scope of needs that access lacks."""
    able = {READ: access.can_read, INGEST: access.can_ingest}
    return next((scope for scope in needs if not able[scope]), None)


def _refuse_scope(scope: str) -> PermissionDenied:
    return PermissionDenied(f"this token lacks the {scope!r} scope", scope=scope)


def require_scope(request: HttpRequest, scope: str) -> Principal:
    """The caller, refused (403) without scope: for what is not one thread (lists, new
    threads, imports), which is always in the caller's own project."""
    principal = caller(request)
    if _lacking(_own_project_rights(principal), [scope]) is not None:
        raise _refuse_scope(scope)
    return principal


def reads_content(request: HttpRequest) -> bool:
    """Whether the caller, once admitted to a thread, may see its content; an ingest-only
    token gets ids and statuses back instead."""
    return _own_project_rights(caller(request)).can_read


def caller_project(request: HttpRequest) -> Project:
    """The project of the calling token (what it creates and imports goes there)."""
    principal = caller(request)
    assert principal.project_id is not None  # sessions never write
    return Project.objects.get(pk=principal.project_id)


def _admit(
    request: HttpRequest, thread: Thread | None, needs: Iterable[str], refusal: NotFound
) -> None:
    """Raise refusal unless the caller reaches thread, PermissionDenied unless it holds needs.

    Reading a hidden thread (a moderator's session, an admin token) is recorded in the audit
    log; writes are audited by what they do.
    """
    principal = caller(request)
    if thread is None:
        raise refusal
    access = rights(principal, thread)
    if not access.in_project:
        raise refusal
    missing = _lacking(access, needs)
    if missing is not None:
        raise _refuse_scope(missing)
    if thread.hidden and request.method == "GET":
        moderation.record_hidden_api_read(
            principal=principal, thread_id=thread.id, path=request.path
        )


def get_thread_for_caller(request: HttpRequest, thread_id: str, *, needs: Iterable[str]) -> Thread:
    """The thread, or NotFound when the id is unknown or the caller does not reach it."""
    thread = Thread.objects.filter(pk=thread_id).first() if is_ulid(thread_id) else None
    _admit(
        request, thread, needs, NotFound(f"thread {thread_id} does not exist", threadId=thread_id)
    )
    assert thread is not None
    return thread


def get_run_for_caller(request: HttpRequest, run_id: str, *, needs: Iterable[str]) -> Run:
    """The run with its thread (not its snapshot), or NotFound when the id is unknown or
    the caller does not reach its thread."""
    run = (
        Run.objects.select_related("thread").defer("snapshot").filter(pk=run_id).first()
        if is_ulid(run_id)
        else None
    )
    refusal = NotFound(f"run {run_id} does not exist", runId=run_id)
    _admit(request, run.thread if run is not None else None, needs, refusal)
    assert run is not None
    return run


def run_id_for_caller(request: HttpRequest, run_id: str, *, needs: Iterable[str]) -> str:
    """The run's id as stored, or NotFound as get_run_for_caller: one small query, for the
    paths that hand the id on (appends, the live stream) and need nothing else of the run."""
    row = (
        Run.objects.filter(pk=run_id)
        .values_list("id", "thread_id", "thread__project_id", "thread__hidden")
        .first()
        if is_ulid(run_id)
        else None
    )
    # Only what the decision reads: the thread's project and whether it is hidden.
    thread = Thread(id=row[1], project_id=row[2], hidden=row[3]) if row is not None else None
    _admit(request, thread, needs, NotFound(f"run {run_id} does not exist", runId=run_id))
    assert row is not None
    return str(row[0])


def append_reach(request: HttpRequest, *, needs: Iterable[str]) -> Reach | None:
    """The threads of its project the calling token may append to, for the ledger's one-statement
    append (`rights` decided for a hidden and a visible thread there: a token reaches nothing
    outside its project); None for a session. Whatever the append does not reach this way
    goes through run_id_for_caller, which says why."""
    principal = caller(request)
    project_id = principal.project_id
    if project_id is None:
        return None

    def may(hidden: bool) -> bool:
        access = rights(principal, Thread(project_id=project_id, hidden=hidden))
        return access.in_project and _lacking(access, needs) is None

    return Reach(project_id=project_id, visible=may(False), hidden=may(True))


def require_may_stop(request: HttpRequest, run: Run, *, action: str) -> None:
    """Refuse (403) to cancel or restore run unless `permissions.may_stop` lets the caller:
    an agent's run (begun through the API) by an ingest token of its project; a run started
    in the browser only by a token with the admin scope."""
    if not permissions.may_stop(run, token=rights(caller(request), run.thread)):
        raise PermissionDenied(
            f"this token may not {action} a run that was not begun through the API:"
            " that needs the 'admin' scope",
            scope=ADMIN,
            origin=run.origin,
        )


def get_import_job_for_caller(request: HttpRequest, job_id: str) -> ImportJob:
    """An import job of the caller's project (its importer polls it: read or ingest), or
    NotFound."""
    job = ImportJob.objects.filter(pk=job_id).first() if is_ulid(job_id) else None
    principal = caller(request)
    if job is None or not _in_project(principal, job.project_id):
        raise NotFound(f"import {job_id} does not exist", jobId=job_id)
    access = _own_project_rights(principal)
    if not (access.can_read or access.can_ingest):
        raise _refuse_scope(READ)
    return job


def _in_project(principal: Principal, project_id: int) -> bool:
    """Whether project_id is the token's project (for a session: one its user reads)."""
    if principal.project_id is None:
        return permissions.project_access(principal.user, project_id).can_read
    return project_id == principal.project_id


def _reachable(principal: Principal, rows: QuerySet[_Row], thread: str) -> QuerySet[_Row]:
    """rows whose thread principal reaches, as `rights` decides; thread is the lookup from
    a row to its thread ("" for threads themselves, "thread__" for runs)."""
    if principal.project_id is None:
        readable = permissions.readable_threads(principal.user)
        return rows.filter(**{f"{thread or 'pk__'}in": readable})
    rows = rows.filter(**{f"{thread}project_id": principal.project_id})
    if _own_project_rights(principal).sees_hidden:
        return rows
    return rows.filter(**{f"{thread}hidden": False})


def readable_threads(request: HttpRequest) -> QuerySet[Thread]:
    """Every thread whose content the caller may read (403 without the read scope)."""
    principal = require_scope(request, READ)
    return _reachable(principal, Thread.objects.all(), "")


def readable_scores(request: HttpRequest, scores: QuerySet[Score]) -> QuerySet[Score]:
    """scores, narrowed to those whose thread the caller may read (403 without read)."""
    return _reachable(require_scope(request, READ), scores, "thread__")


def require_admin_scope(request: HttpRequest) -> Principal:
    """The caller, refused (403) without the admin scope (a token's project-wide acts)."""
    principal = caller(request)
    if not _own_project_rights(principal).is_admin:
        raise _refuse_scope(ADMIN)
    return principal


def readable_runs(request: HttpRequest, runs: QuerySet[Run]) -> QuerySet[Run]:
    """runs, narrowed to those whose thread the caller may read (403 without read)."""
    return _reachable(require_scope(request, READ), runs, "thread__")


def get_project_for_caller(
    request: HttpRequest, slug: str | None, *, needs: Iterable[str]
) -> Project:
    """The project called slug (for a token, its own also when slug is omitted), NotFound
    when the caller is not in it, then PermissionDenied without the scopes of needs."""
    principal = caller(request)
    if slug:
        project = Project.objects.filter(slug=slug).first() if slug_re.match(slug) else None
    elif principal.project_id is not None:
        project = Project.objects.filter(pk=principal.project_id).first()
    else:
        raise InvalidInput("a browser session must name the project", field="project")
    if project is None or not _in_project(principal, project.pk):
        raise NotFound(f"project {slug} does not exist", project=slug)
    missing = _lacking(_own_project_rights(principal), needs)
    if missing is not None:
        raise _refuse_scope(missing)
    return project

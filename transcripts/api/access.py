"""Who sees what through the API: one decision for every router and the live stream.

`caller_access` turns the caller (a `Principal`) into the one policy's `Access`
(`transcripts.permissions`), and `may_see` decides from it whether a thread, and so its
runs, events and messages, exists for that caller. Everything else here applies that one
decision: to a thread, to a run (also as a single small query for the append path), and to
querysets of threads and runs. Outsiders get NotFound, never a hint that the object exists.
"""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Model, QuerySet
from django.http import HttpRequest

from transcripts.api.auth import INGEST, Principal
from transcripts.errors import NotFound
from transcripts.ids import is_ulid
from transcripts.ledger import moderation
from transcripts.models import Run, Thread
from transcripts.permissions import Access, Role

_Row = TypeVar("_Row", bound=Model)


def caller(request: HttpRequest) -> Principal:
    """The principal the auth class attached to request."""
    principal = getattr(request, "auth", None)
    assert isinstance(principal, Principal)
    return principal


def caller_access(principal: Principal) -> Access:
    """The principal's rights: an ingest token edits, a reader reads; a staff account's
    token or session also sees hidden threads."""
    role = Role.EDITOR if principal.can(INGEST) else Role.VIEWER
    return Access(role=role)


def may_see(principal: Principal, *, hidden: bool) -> bool:
    """Whether principal sees a thread (with its runs, events and messages)."""
    return not hidden or principal.can("admin") or principal.is_staff


def _admit(request: HttpRequest, found: tuple[str, bool] | None, refusal: NotFound) -> None:
    """Raise refusal unless the caller sees the (thread id, hidden) found.

    Staff reading a hidden thread is recorded in the audit log (writes are audited apart).
    """
    principal = caller(request)
    if found is None or not may_see(principal, hidden=found[1]):
        raise refusal
    thread_id, hidden = found
    if hidden and request.method == "GET":
        moderation.record_hidden_api_read(
            principal=principal, thread_id=thread_id, path=request.path
        )


def get_thread_for_caller(request: HttpRequest, thread_id: str) -> Thread:
    """The thread, or NotFound when the id is unknown or the caller does not see it."""
    thread = Thread.objects.filter(pk=thread_id).first() if is_ulid(thread_id) else None
    found = (thread.id, thread.hidden) if thread is not None else None
    _admit(request, found, NotFound(f"thread {thread_id} does not exist", threadId=thread_id))
    assert thread is not None
    return thread


def get_run_for_caller(request: HttpRequest, run_id: str) -> Run:
    """The run with its thread (not its snapshot), or NotFound when the id is unknown or
    the caller does not see its thread."""
    run = (
        Run.objects.select_related("thread").defer("snapshot").filter(pk=run_id).first()
        if is_ulid(run_id)
        else None
    )
    found = (run.thread_id, run.thread.hidden) if run is not None else None
    _admit(request, found, NotFound(f"run {run_id} does not exist", runId=run_id))
    assert run is not None
    return run


def run_id_for_caller(request: HttpRequest, run_id: str) -> str:
    """The run's id as stored, or NotFound as get_run_for_caller: one small query, for the
    paths that hand the id on (appends, the live stream) and need nothing else of the run."""
    row = (
        Run.objects.filter(pk=run_id).values_list("id", "thread_id", "thread__hidden").first()
        if is_ulid(run_id)
        else None
    )
    found = (row[1], row[2]) if row is not None else None
    _admit(request, found, NotFound(f"run {run_id} does not exist", runId=run_id))
    assert row is not None
    return str(row[0])


def _narrowed(principal: Principal, rows: QuerySet[_Row], hidden: str) -> QuerySet[_Row]:
    """rows whose thread principal sees, by may_see; hidden names the thread's flag."""
    shown = [state for state in (False, True) if may_see(principal, hidden=state)]
    return rows if len(shown) == 2 else rows.filter(**{f"{hidden}__in": shown})


def visible_threads(request: HttpRequest) -> QuerySet[Thread]:
    """Every thread the caller sees."""
    return _narrowed(caller(request), Thread.objects.all(), "hidden")


def visible_runs(request: HttpRequest, runs: QuerySet[Run]) -> QuerySet[Run]:
    """runs, narrowed to those whose thread the caller sees."""
    return _narrowed(caller(request), runs, "thread__hidden")

"""The thread list of the current project: search, filters, sort and "load more"."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q, QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from transcripts import selectors
from transcripts.ids import is_ulid
from transcripts.models import Thread
from transcripts.pagination import decode_cursor, encode_cursor
from transcripts.permissions import project_access
from transcripts.times import parse_iso
from transcripts.web.access import current_project, login_required, threads_for_user
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.threads import thread_rows

TEMPLATE = "transcripts/threads.html"
NO_PROJECT = "transcripts/no_project.html"
THREADS_PER_PAGE = 25

SORTS: dict[str, tuple[str, bool]] = {
    "recent": ("updated_at", True),
    "oldest": ("updated_at", False),
    "newest": ("created_at", True),
    "title": ("title", False),
}


class ThreadFilters(forms.Form):
    """The thread list's search, filters and sort (all optional, from the query string)."""

    q = forms.CharField(required=False, max_length=200, label="Search")
    status = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Any status"),
            ("live", "Live (streaming)"),
            ("locked", "Locked"),
            ("visible", "Visible"),
            ("hidden", "Hidden"),
        ],
    )
    branches = forms.BooleanField(required=False, label="Has branches")
    failed = forms.BooleanField(required=False, label="Has failed runs")
    flagged = forms.BooleanField(required=False, label="Flagged")
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    who = forms.CharField(required=False, max_length=200, label="Agent or model")
    sort = forms.ChoiceField(
        required=False,
        choices=[
            ("recent", "Recent activity"),
            ("oldest", "Oldest activity"),
            ("newest", "Newest"),
            ("title", "Title"),
        ],
    )


def _position(cursor: str, key: str) -> tuple[Any, str] | None:
    """The (sort value, thread id) a "load more" cursor continues after, or None if invalid."""
    values = decode_cursor(cursor, 2)
    if values is None:
        return None
    value, thread_id = values
    if not isinstance(thread_id, str) or not is_ulid(thread_id):
        return None
    if key == "title":
        return (value, thread_id) if isinstance(value, str) else None
    moment = parse_iso(value) if isinstance(value, str) else None
    return (moment, thread_id) if moment is not None else None


def _after(
    threads: QuerySet[Thread], key: str, desc: bool, position: tuple[Any, str]
) -> QuerySet[Thread]:
    value, thread_id = position
    op = "lt" if desc else "gt"
    return threads.filter(Q(**{f"{key}__{op}": value}) | Q(**{key: value, f"id__{op}": thread_id}))


def _invalid_filters(
    request: HtmxHttpRequest, form: ThreadFilters, *, bad_cursor: bool
) -> HttpResponse:
    """A 400 that names each bad field: the list is not silently shown unfiltered."""
    errors = [
        f"{form.fields[name].label or name.capitalize()}: {' '.join(str(m) for m in messages)}"
        for name, messages in form.errors.items()
    ]
    if bad_cursor:
        errors.append("Page: the “load more” position is not valid; start again from the top.")
    project = current_project(request)
    context = {
        "form": form,
        "project": project,
        "rows": [],
        "errors": errors,
        "filtered": True,
        "can_start_thread": project is not None and project_access(request.user, project).can_edit,
    }
    template = f"{TEMPLATE}#results" if request.htmx else TEMPLATE
    return render(request, template, context, status=400)


@login_required
@require_GET
def thread_list(request: HtmxHttpRequest) -> HttpResponse:
    """The current project's threads the reader may see: search, filters, sort and cursor
    pagination. Someone in no project is told so (not a 404: nothing is hidden from them)."""
    project = current_project(request)
    if project is None:
        return render(request, NO_PROJECT)
    form = ThreadFilters(request.GET)
    if not form.is_valid():
        return _invalid_filters(request, form, bad_cursor=False)
    filters: dict[str, Any] = form.cleaned_data
    query = filters.get("q") or ""
    key, desc = SORTS.get(filters.get("sort") or "recent", SORTS["recent"])
    cursor = request.GET.get("cursor", "")
    position = _position(cursor, key) if cursor else None
    if cursor and position is None:
        return _invalid_filters(request, form, bad_cursor=True)
    visible, access = threads_for_user(request, project)
    status = filters.get("status") or ""
    threads = selectors.filter_threads(
        selectors.search_threads(visible, query),
        status=status,
        has_branches=bool(filters.get("branches")),
        has_failed_runs=bool(filters.get("failed")),
        flagged=bool(filters.get("flagged")),
        since=filters.get("since"),
        until=filters.get("until"),
        agent_or_model=filters.get("who") or "",
    )
    if status == "hidden" and not access.sees_hidden:
        threads = threads.none()
    if position is not None:
        threads = _after(threads, key, desc, position)
    order = [f"-{key}", "-id"] if desc else [key, "id"]
    page = list(threads.order_by(*order)[: THREADS_PER_PAGE + 1])
    more = len(page) > THREADS_PER_PAGE
    page = page[:THREADS_PER_PAGE]
    params = request.GET.copy()
    params.pop("cursor", None)
    next_query = ""
    if more:
        params["cursor"] = encode_cursor(getattr(page[-1], key), page[-1].id)
        next_query = params.urlencode()
    context = {
        "form": form,
        "project": project,
        "rows": thread_rows(page, query),
        "next_query": next_query,
        "query": query,
        "filtered": any(v for k, v in filters.items() if k != "sort"),
        "can_start_thread": access.can_edit,
    }
    template = TEMPLATE
    if request.htmx:
        template += "#rows" if cursor else "#results"
    return render(request, template, context)

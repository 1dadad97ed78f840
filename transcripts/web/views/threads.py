"""The thread list of the current project: search, filters, sort and "load more"."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.db.models import QuerySet
from django.http import Http404, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from transcripts import selectors
from transcripts.errors import InvalidInput
from transcripts.ledger.projects import choose_project
from transcripts.models import ScoreDataType, Thread
from transcripts.pagination import Keyset, Position, decode_position, ulid
from transcripts.permissions import Access, project_access
from transcripts.selectors.live import only_thread
from transcripts.selectors.organise import (
    pinned_ids,
    pinned_threads,
    split_archived,
    tag_vocabulary,
)
from transcripts.selectors.score_filters import (
    SCORE_SORTS,
    Judged,
    column_score,
    judged_threads,
    score_cells,
    score_cursor_value,
    score_sorted,
    split_judged,
)
from transcripts.selectors.scores import score_configs
from transcripts.web.access import (
    current_project,
    get_project_for_user,
    login_required,
    threads_for_user,
)
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.threads import (
    PREVIEW_CHARS,
    density_links,
    sort_headers,
    thread_rows,
)

TEMPLATE = "transcripts/threads.html"
NO_PROJECT = "transcripts/no_project.html"
THREADS_PER_PAGE = 25
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,100}")

# The compact/detailed toggle, remembered per browser for a year.
DENSITY_COOKIE = "thread_density"
DENSITIES = ("detailed", "compact")
YEAR = 365 * 24 * 3600


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
    archived = forms.ChoiceField(
        required=False,
        label="Archived",
        choices=[("", "Not archived"), ("yes", "Archived"), ("any", "Archived or not")],
    )
    tag = forms.CharField(required=False, max_length=40, label="Tag")
    sort = forms.ChoiceField(
        required=False,
        choices=[
            ("recent", "Recent activity"),
            ("oldest", "Oldest activity"),
            ("newest", "Newest"),
            ("created_asc", "Oldest created"),
            ("title", "Title"),
            ("messages", "Most messages"),
            ("messages_asc", "Fewest messages"),
            ("branches", "Most branches"),
            ("branches_asc", "Fewest branches"),
            ("tokens", "Most tokens"),
            ("tokens_asc", "Fewest tokens"),
            ("cost", "Highest cost"),
            ("cost_asc", "Lowest cost"),
            ("duration", "Slowest last run"),
            ("duration_asc", "Fastest last run"),
            ("score", "Highest score"),
            ("score_asc", "Lowest score"),
        ],
    )
    scoreColumn = forms.CharField(required=False, max_length=100, label="Score column")


_ARCHIVED: dict[str, bool | None] = {"": False, "yes": True, "any": None}


def organise_context(access: Access, pins: list[str], project_id: int) -> dict[str, Any]:
    """What the rows' ⋯ menus and the bulk bar need: the reader's pins and rights, the tags."""
    return {
        "pinned_ids": set(pins),
        "can_organise": access.can_edit,
        "can_delete": access.can_administer,
        "tag_vocabulary": tag_vocabulary(project_id),
    }


def _position(cursor: str, keyset: Keyset) -> Position | None:
    """Where a "load more" cursor of this sort continues, or None when it is not one of its."""
    if keyset.key in (k.key for k in SCORE_SORTS.values()):
        return decode_position(cursor, score_cursor_value, ulid)
    return selectors.sort_position(cursor, keyset)


def _judged(
    threads: QuerySet[Thread], project_id: int, judged: Judged, score: tuple[str, str]
) -> QuerySet[Thread]:
    """threads narrowed by the search's judgement words and, for a score sort, annotated
    with the score (name, sort) they are sorted by."""
    threads = judged_threads(threads, project_id, judged)
    name, sort = score
    return score_sorted(threads, name, sort) if sort in SCORE_SORTS else threads


def _score_names(project_id: int, column: str) -> list[str]:
    """The names the Score column offers: the live numeric and boolean configs' (a categorical
    score has no average), and the one shown."""
    averaged = (ScoreDataType.NUMERIC, ScoreDataType.BOOLEAN)
    names = [
        c.name
        for c in score_configs(project_id)
        if c.archived_at is None and c.data_type in averaged
    ]
    return names if not column or column in names else [*names, column]


def _density(request: HtmxHttpRequest) -> tuple[str, bool]:
    """The list's density (compact or detailed) and whether the request chose it now (a
    ?density= link, remembered in a cookie) rather than reading the cookie."""
    asked = request.GET.get("density", "")
    if asked in DENSITIES:
        return asked, True
    remembered = request.COOKIES.get(DENSITY_COOKIE, "")
    return (remembered if remembered in DENSITIES else DENSITIES[0]), False


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


def _switch(request: HtmxHttpRequest) -> HttpResponse:
    """The list asked for with ?project=<slug> (the dashboard's links name their project): that
    project becomes the member's current one and the answer is a 303 to the same list without
    the parameter; no such project, or one the user is not a member of, is a 404."""
    slug = request.GET.get("project", "")
    if not SLUG.fullmatch(slug):
        raise Http404("no such project")
    project, _ = get_project_for_user(request, slug)
    current = current_project(request)
    if current is None or current.pk != project.pk:
        choose_project(user=request.user, project=project)
    rest = request.GET.copy()
    rest.pop("project")
    query = rest.urlencode()
    return HttpResponseRedirect(reverse("thread_list") + (f"?{query}" if query else ""), status=303)


@login_required
@require_GET
def thread_list(request: HtmxHttpRequest) -> HttpResponse:
    """The current project's threads the reader may see: search, filters, sort and cursor
    pagination. Someone in no project is told so (not a 404: nothing is hidden from them).
    ?project=<slug> switches to that project first (_switch)."""
    if "project" in request.GET:
        return _switch(request)
    project = current_project(request)
    if project is None:
        return render(request, NO_PROJECT)
    form = ThreadFilters(request.GET)
    if not form.is_valid():
        return _invalid_filters(request, form, bad_cursor=False)
    filters: dict[str, Any] = form.cleaned_data
    try:
        query, judged = split_judged(filters.get("q") or "")
    except InvalidInput as refusal:
        form.add_error("q", str(refusal))
        return _invalid_filters(request, form, bad_cursor=False)
    query, asked, said = split_archived(query)
    archived = asked if said else _ARCHIVED[filters.get("archived") or ""]
    sort = filters.get("sort") or "recent"
    column = column_score(project.pk, (filters.get("scoreColumn") or "").strip())
    if sort in SCORE_SORTS and not column:
        form.add_error("sort", "no score to sort by: choose a score column first")
        return _invalid_filters(request, form, bad_cursor=False)
    keyset = selectors.THREAD_SORTS.get(sort) or SCORE_SORTS[sort]
    cursor = request.GET.get("cursor", "")
    position = _position(cursor, keyset) if cursor else None
    if cursor and position is None:
        return _invalid_filters(request, form, bad_cursor=True)
    visible, access = threads_for_user(request, project)
    status = filters.get("status") or ""
    threads = _judged(
        selectors.filter_threads(
            selectors.search_threads(visible, query),
            status=status,
            has_branches=bool(filters.get("branches")),
            has_failed_runs=bool(filters.get("failed")),
            flagged=bool(filters.get("flagged")),
            since=filters.get("since"),
            until=filters.get("until"),
            agent_or_model=filters.get("who") or "",
            archived=archived,
            tag=" ".join((filters.get("tag") or "").split()),
        ),
        project.pk,
        judged,
        (column, sort),
    )
    only = request.GET.get("only", "")  # the one row a live list asks for, if it passes
    pins = pinned_ids(request.user, project.pk)
    nothing = status == "hidden" and not access.sees_hidden
    pinned = [] if nothing or cursor or only else pinned_threads(threads, pins, keyset)
    rest = threads.exclude(pk__in=pins) if pins and not only else threads
    page = (
        []
        if nothing
        else only_thread(rest, only)
        if only
        else selectors.keyset_page(rest, keyset, after=position, limit=THREADS_PER_PAGE + 1)
    )
    if only and not page:
        return HttpResponse(status=204)
    more = len(page) > THREADS_PER_PAGE
    page = page[:THREADS_PER_PAGE]
    shown = [*pinned, *page]
    ids = [t.id for t in shown]
    params = request.GET.copy()
    params.pop("cursor", None)
    params.pop("density", None)
    params.pop("only", None)
    # Where a row's action returns: the list from its top (not a "load more" fragment).
    list_url = f"{request.path}?{params.urlencode()}" if params else request.path
    density, chosen = _density(request)
    next_query = ""
    if more:
        following = params.copy()
        following["cursor"] = keyset.cursor(page[-1])
        next_query = following.urlencode()
    context = {
        "form": form,
        "project": project,
        "rows": thread_rows(
            shown, selectors.thread_list_facts(ids, query, PREVIEW_CHARS), score_cells(ids, column)
        ),
        "next_query": next_query,
        "query": query,
        "filtered": bool(judged)
        or any(v for k, v in filters.items() if k not in ("sort", "scoreColumn")),
        "score_column": column,
        "score_names": _score_names(project.pk, column),
        "can_start_thread": access.can_edit,
        **organise_context(access, pins, project.pk),
        "list_url": list_url,
        "headers": sort_headers(params, sort, column),
        "density": density,
        "densities": density_links(params, density),
        "queue_url": _queue_url(project.slug, params) if access.can_moderate else "",
        "experiment_url": _experiment_url(project.slug, params) if access.can_edit else "",
    }
    template = TEMPLATE
    if request.htmx or only:
        template += "#rows" if cursor or only else "#results"
    response = render(request, template, context)
    if chosen:
        response.set_cookie(DENSITY_COOKIE, density, max_age=YEAR, samesite="Lax")
    return response


def _experiment_url(slug: str, params: QueryDict) -> str:
    """The new experiment form with its threads given by this list's filters."""
    kept = params.copy()
    for key in ("sort", "scoreColumn", "project"):
        kept.pop(key, None)
    query = kept.urlencode() or "?"  # "?": the whole list, unfiltered
    return f"{reverse('experiment_new', args=[slug])}?{urlencode({'filter': query})}"


def _queue_url(slug: str, params: QueryDict) -> str:
    """The project's queues page with its create form holding this list's filters."""
    kept = params.copy()
    for key in ("sort", "scoreColumn", "project"):
        kept.pop(key, None)
    return f"{reverse('project_queues', args=[slug])}?{urlencode({'filter': kept.urlencode()})}"

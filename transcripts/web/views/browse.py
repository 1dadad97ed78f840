"""HTML views: thread list, conversation, tree map and run timeline (htmx partials)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import wraps
from typing import Any, TypeVar, cast

from django import forms
from django.contrib.auth.decorators import login_required as django_login_required
from django.contrib.auth.views import redirect_to_login
from django.db import connection
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from transcripts import selectors
from transcripts.ids import is_ulid
from transcripts.ledger import moderation
from transcripts.models import OPEN_STATUSES, Event, Message, Run, Thread
from transcripts.web import rendering
from transcripts.web.tree_layout import ROW_HEIGHT, Segment, TreeNode, layout_tree

THREADS_PER_PAGE = 25
WINDOW = 50  # messages of the path sent at once
AROUND_BEFORE = 15  # around a permalink: this many above it ...
AROUND_AFTER = 35  # ... and this many below
EVENTS_PER_PAGE = 100


_EMPTY = SafeString("")


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


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


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database check."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def _threads_for(request: HttpRequest) -> QuerySet[Thread]:
    return selectors.visible_threads(include_hidden=request.user.is_staff)


def _thread_or_404(request: HttpRequest, thread_id: str) -> Thread:
    """The thread if the reader may see it, with its head's depth and any open run."""
    if not is_ulid(thread_id):
        raise Http404("no such thread")
    open_runs = Run.objects.filter(thread_id=OuterRef("pk"), status__in=OPEN_STATUSES)
    threads = (
        _threads_for(request)
        .select_related("head")
        .only(
            "id",
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
    )
    return get_object_or_404(threads, pk=thread_id)


def _message_or_404(thread: Thread, message_id: str) -> Message:
    if not is_ulid(message_id):
        raise Http404("no such message")
    return get_object_or_404(
        Message.objects.only("id", "thread_id", "parent_id", "depth", "active"),
        pk=message_id,
        thread=thread,
    )


# --- thread list -------------------------------------------------------------------------

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


def _encode_cursor(value: Any, thread_id: str) -> str:
    raw = json.dumps([value.isoformat() if isinstance(value, datetime) else value, thread_id])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, key: str) -> tuple[Any, str] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value, thread_id = json.loads(raw)
        if key != "title":
            value = datetime.fromisoformat(value)
    except (ValueError, TypeError, binascii.Error):
        return None
    if not is_ulid(thread_id) or not isinstance(value, str | datetime):
        return None
    return value, thread_id


def _after_cursor(threads: QuerySet[Thread], key: str, desc: bool, cursor: str) -> QuerySet[Thread]:
    position = _decode_cursor(cursor, key)
    if position is None:
        return threads
    value, thread_id = position
    op = "lt" if desc else "gt"
    return threads.filter(Q(**{f"{key}__{op}": value}) | Q(**{key: value, f"id__{op}": thread_id}))


@dataclass
class ThreadRow:
    """One line of the thread list."""

    thread: Thread
    stats: selectors.ThreadStats
    url: str
    snippet: SafeString | None = None
    preferred: int = 0  # preferred marks on the thread's runs


def _mark_hits(snippet: str) -> SafeString:
    marked = str(escape(snippet))
    marked = marked.replace(selectors.HIT_START, "<mark>").replace(selectors.HIT_STOP, "</mark>")
    return mark_safe(marked)


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
    context = {"form": form, "rows": [], "errors": errors, "filtered": True}
    template = "transcripts/threads.html#results" if request.htmx else "transcripts/threads.html"
    return render(request, template, context, status=400)


@login_required
@require_GET
def thread_list(request: HtmxHttpRequest) -> HttpResponse:
    """Every thread the reader may see: search, filters, sort and cursor pagination."""
    form = ThreadFilters(request.GET)
    if not form.is_valid():
        return _invalid_filters(request, form, bad_cursor=False)
    filters: dict[str, Any] = form.cleaned_data
    query = filters.get("q") or ""
    key, desc = SORTS.get(filters.get("sort") or "recent", SORTS["recent"])
    cursor = request.GET.get("cursor", "")
    if cursor and _decode_cursor(cursor, key) is None:
        return _invalid_filters(request, form, bad_cursor=True)
    status = filters.get("status") or ""
    if status == "hidden" and not request.user.is_staff:
        status = "none"
    threads = selectors.filter_threads(
        selectors.search_threads(_threads_for(request), query),
        status=status,
        has_branches=bool(filters.get("branches")),
        has_failed_runs=bool(filters.get("failed")),
        flagged=bool(filters.get("flagged")),
        since=filters.get("since"),
        until=filters.get("until"),
        agent_or_model=filters.get("who") or "",
    )
    if status == "none":
        threads = threads.none()
    if cursor:
        threads = _after_cursor(threads, key, desc, cursor)
    order = [f"-{key}", "-id"] if desc else [key, "id"]
    page = list(threads.order_by(*order)[: THREADS_PER_PAGE + 1])
    more = len(page) > THREADS_PER_PAGE
    page = page[:THREADS_PER_PAGE]
    ids = [t.id for t in page]
    stats = selectors.thread_stats(ids)
    hits = selectors.search_hits(ids, query)
    preferred = selectors.preferred_counts(ids)
    rows = []
    for thread in page:
        url = reverse("conversation", args=[thread.id])
        hit = hits.get(thread.id)
        if hit is not None:
            url += f"?leaf={hit.message_id}#m-{hit.message_id}"
        snippet = _mark_hits(hit.snippet) if hit is not None and hit.snippet else None
        rows.append(ThreadRow(thread, stats[thread.id], url, snippet, preferred.get(thread.id, 0)))
    params = request.GET.copy()
    params.pop("cursor", None)
    next_query = ""
    if more:
        params["cursor"] = _encode_cursor(getattr(page[-1], key), page[-1].id)
        next_query = params.urlencode()
    context = {
        "form": form,
        "rows": rows,
        "next_query": next_query,
        "query": query,
        "filtered": any(v for k, v in filters.items() if k != "sort"),
    }
    template = "transcripts/threads.html"
    if request.htmx:
        template += "#rows" if cursor else "#results"
    return render(request, template, context)


# --- conversation ------------------------------------------------------------------------


@dataclass
class PartView:
    """One part of a message, ready for the template."""

    type: str
    html: SafeString = _EMPTY
    text: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    is_error: bool = False
    input_html: SafeString = _EMPTY
    output_html: SafeString = _EMPTY
    result: PartView | None = None
    joined: bool = False  # a tool result shown with its call
    url: str = ""
    preview_url: str = ""
    name: str = ""
    mime_type: str = ""


@dataclass
class Switcher:
    """The previous / i of n / next control of a message that has siblings."""

    index: int
    total: int
    previous_id: str | None
    next_id: str | None
    active_id: str | None
    active_index: int | None
    compare_url: str = ""


@dataclass
class MessageItem:
    """A message with everything its card shows."""

    message: Message
    parts: list[PartView]
    agent: str = ""
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str = ""
    hidden: bool = False
    flagged: bool = False
    redacted: bool = False
    errors: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    copy_text: str = ""
    switcher: Switcher | None = None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _part_view(part: Any) -> PartView:
    if not isinstance(part, dict):
        return PartView(type="unknown", html=rendering.pretty_json(part))
    kind = _text(part.get("type"))
    if kind == "text":
        text = _text(part.get("text"))
        return PartView(type="text", text=text, html=rendering.render_markdown(text))
    if kind == "reasoning":
        text = _text(part.get("text"))
        return PartView(type="reasoning", text=text, html=rendering.render_markdown(text))
    if kind == "tool-call":
        return PartView(
            type="tool-call",
            tool_name=_text(part.get("toolName")) or "tool",
            tool_call_id=_text(part.get("toolCallId")),
            input_html=rendering.pretty_json(part.get("input")),
        )
    if kind == "tool-result":
        return PartView(
            type="tool-result",
            tool_name=_text(part.get("toolName")),
            tool_call_id=_text(part.get("toolCallId")),
            is_error=bool(part.get("isError")),
            output_html=rendering.pretty_json(part.get("output")),
        )
    if kind == "file":
        url = _text(part.get("url"))
        mime_type = _text(part.get("mimeType"))
        return PartView(
            type="file",
            url=url.strip() if rendering.is_http_url(url) else "",
            preview_url=rendering.image_preview_url(url, mime_type) or "",
            name=_text(part.get("name")) or _text(part.get("filename")) or "file",
            mime_type=mime_type,
        )
    return PartView(type="unknown", tool_name=kind, html=rendering.pretty_json(part))


def _usage_number(usage: Any, *keys: str) -> int | None:
    if not isinstance(usage, dict):
        return None
    for key in keys:
        if isinstance(usage.get(key), int):
            return int(usage[key])
    return None


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("message", "type", "kind", "name"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return rendering.json_preview(value, 120)


def _switcher(message: Message, group: list[tuple[str, bool]] | None) -> Switcher | None:
    if not group:
        return None
    ids = [i for i, _ in group]
    index = ids.index(message.id)
    return Switcher(
        index=index + 1,
        total=len(ids),
        previous_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        active_id=next((i for i, active in group if active), None),
        active_index=next((n + 1 for n, (_, active) in enumerate(group) if active), None),
        # The alternatives fork at the parent ("root" when they are first messages).
        compare_url=reverse("compare", args=[message.thread_id, message.parent_id or "root"]),
    )


def _message_items(thread: Thread, messages: list[Message]) -> list[MessageItem]:
    """Cards for a window of messages: parts rendered, tool results joined to their calls."""
    siblings = selectors.siblings_of(thread, messages)
    agents = thread.agents if isinstance(thread.agents, dict) else {}
    items: list[MessageItem] = []
    calls: dict[str, PartView] = {}
    for message in messages:
        meta = message.metadata if isinstance(message.metadata, dict) else {}
        parts = [_part_view(p) for p in (message.parts if isinstance(message.parts, list) else [])]
        for part in parts:
            if part.type == "tool-call" and part.tool_call_id:
                calls[part.tool_call_id] = part
            elif part.type == "tool-result" and part.tool_call_id in calls:
                call = calls[part.tool_call_id]
                if call.result is None:
                    call.result = part
                    part.joined = True
                    part.tool_name = part.tool_name or call.tool_name
        agent_id = _text(meta.get("agentId"))
        agent = agents.get(agent_id) if agent_id else None
        usage = meta.get("usage")
        errors = meta.get("errors")
        annotations = meta.get("annotations")
        items.append(
            MessageItem(
                message=message,
                parts=parts,
                agent=(_text(agent.get("agent_name")) if isinstance(agent, dict) else "")
                or agent_id,
                model=_text(meta.get("model")) or message.run.model,
                input_tokens=_usage_number(usage, "inputTokens", "input_tokens"),
                output_tokens=_usage_number(usage, "outputTokens", "output_tokens"),
                finish_reason=_text(meta.get("finishReason")),
                hidden=meta.get("hidden") is True,
                flagged=bool(meta.get("flagged") or getattr(message, "flagged_at", None)),
                redacted=bool(meta.get("redacted") or getattr(message, "redacted_at", None)),
                errors=[_short(e) for e in errors] if isinstance(errors, list) else [],
                annotations=[_short(a) for a in annotations]
                if isinstance(annotations, list)
                else [],
                copy_text="\n\n".join(p.text for p in parts if p.type == "text"),
                switcher=_switcher(message, siblings.get(message.id)),
            )
        )
    return items


@login_required
@require_GET
def conversation(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """A window of one branch of the thread (the active one unless ?leaf= says otherwise)."""
    thread = _thread_or_404(request, thread_id)
    url = reverse("conversation", args=[thread.id])
    direction = request.GET.get("dir", "")
    origin_id = request.GET.get("from", "")
    leaf_id = request.GET.get("leaf", "")
    context: dict[str, Any] = {"thread": thread, "url": url, "leaf": leaf_id}
    if direction in ("before", "after") and origin_id:
        origin = _message_or_404(thread, origin_id)
        if direction == "before":
            messages = selectors.branch_window(origin, before=WINDOW, after=0)[:-1]
            context["has_earlier"] = bool(messages) and messages[0].depth > 0
        else:
            messages = selectors.branch_window(origin, before=0, after=WINDOW + 1)[1:]
            context["has_later"] = len(messages) > WINDOW
            messages = messages[:WINDOW]
        context["items"] = _message_items(thread, messages)
        partial = "earlier" if direction == "before" else "later"
        return render(request, f"transcripts/conversation.html#{partial}", context)
    if thread.hidden and not request.htmx:
        # Staff reading a hidden thread is itself recorded (viewers get a 404 above).
        moderation.record_hidden_view(user=request.user, thread=thread)
    anchor = _message_or_404(thread, leaf_id) if leaf_id else None
    if anchor is not None:
        messages = selectors.branch_window(anchor, before=AROUND_BEFORE, after=AROUND_AFTER + 1)
        below = [m for m in messages if m.depth > anchor.depth]
        context["has_later"] = len(below) > AROUND_AFTER
        if context["has_later"]:
            messages = messages[:-1]
    elif thread.head is not None:
        messages = selectors.active_tail(thread, head_depth=thread.head.depth, count=WINDOW)
    else:
        messages = []
    context.update(
        items=_message_items(thread, messages),
        has_earlier=bool(messages) and messages[0].depth > 0,
        anchor=anchor,
        off_active=anchor is not None and not anchor.active,
        tree_url=reverse("tree", args=[thread.id]),
    )
    template = "transcripts/conversation.html"
    if request.htmx:
        template += "#conversation"
    return render(request, template, context)


# --- tree map ----------------------------------------------------------------------------


@dataclass
class TreeRow:
    """One segment of the tree map with its link and the start of its first message."""

    segment: Segment
    url: str
    snippet: str


@login_required
@require_GET
def tree(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """The whole conversation tree, linear runs collapsed, as a server-rendered SVG graph."""
    thread = _thread_or_404(request, thread_id)
    nodes = [
        TreeNode(id=i, parent_id=p, role=r, depth=d, active=a, status=s)
        for i, p, r, d, a, s in selectors.tree_rows(thread)
    ]
    # Runs without messages hang off their fork point; their ids are ULIDs, not hex.
    nodes += [
        TreeNode(id=f"run:{i}", parent_id=fork, role="run", depth=0, active=False, status=s,
                 run_id=i)
        for i, fork, s in selectors.runs_without_messages(thread)
    ]  # fmt: skip
    tree_map = layout_tree(nodes)
    first_ids = {
        s.first.id: selectors.ulid_from_hex(s.first.id) for s in tree_map.segments if not s.is_stub
    }
    snippets = selectors.message_previews(list(first_ids.values()))
    url = reverse("conversation", args=[thread.id])
    rows = []
    for segment in tree_map.segments:
        if segment.is_stub:
            rows.append(TreeRow(segment, reverse("run_detail", args=[segment.first.run_id]), ""))
            continue
        first = first_ids[segment.first.id]
        rows.append(TreeRow(segment, f"{url}?leaf={first}#m-{first}", snippets.get(first, "")))
    context = {
        "thread": thread,
        "tree": tree_map,
        "rows": rows,
        "row_height": ROW_HEIGHT,
        "half_row": ROW_HEIGHT // 2,
        "url": url,
    }
    template = "transcripts/tree.html"
    if request.htmx:
        template += "#tree"
    return render(request, template, context)


# --- run timeline ------------------------------------------------------------------------


@dataclass
class EventRow:
    """One line of a run's event log."""

    event: Event
    offset: float | None
    preview: str
    payload: SafeString


@dataclass
class ChartPoint:
    """One point of the output-over-time chart, in SVG coordinates."""

    x: float
    y: float
    seconds: float
    chars: int


CHART_WIDTH, CHART_HEIGHT = 600, 120


def _chart(series: list[tuple[float, int]]) -> tuple[list[ChartPoint], str, int]:
    """Cumulative output as an SVG polyline (points, path, total characters)."""
    if not series:
        return [], "", 0
    total = sum(c for _, c in series)
    span = series[-1][0] or 1.0
    points = [ChartPoint(0.0, float(CHART_HEIGHT), 0.0, 0)]
    running = 0
    for seconds, chars in series:
        running += chars
        y = CHART_HEIGHT - (running / total * CHART_HEIGHT if total else 0)
        points.append(ChartPoint(seconds / span * CHART_WIDTH, y, seconds, running))
    path = "M" + " L".join(f"{p.x:.1f} {p.y:.1f}" for p in points)
    return points, path, total


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start).total_seconds()


@login_required
@require_GET
def run_detail(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """A run's status, timings, usage and paged event log; live over SSE while it streams."""
    if not is_ulid(run_id):
        raise Http404("no such run")
    runs = Run.objects.select_related("thread").defer("snapshot", "thread__metadata")
    if not request.user.is_staff:
        runs = runs.filter(thread__hidden=False)
    run = get_object_or_404(
        runs.annotate(
            first_message_id=Subquery(
                Message.objects.filter(run_id=OuterRef("pk")).order_by("position").values("id")[:1]
            ),
        ),
        pk=run_id,
    )
    try:
        after = int(request.GET.get("after") or "0")
    except ValueError:
        after = -1
    if not 0 <= after < 2**62:
        return HttpResponseBadRequest("after: a sequence number (0 or more) was expected.")
    events = list(
        Event.objects.filter(run_id=run.id, seq__gt=after).order_by("seq")[: EVENTS_PER_PAGE + 1]
    )
    more = len(events) > EVENTS_PER_PAGE
    events = events[:EVENTS_PER_PAGE]
    origin = run.started_at or run.created_at
    rows = [
        EventRow(
            event=e,
            offset=_seconds(origin, e.at),
            preview=rendering.json_preview(e.data, 140),
            payload=rendering.pretty_json(e.data),
        )
        for e in events
    ]
    context: dict[str, Any] = {
        "run": run,
        "thread": run.thread,
        "rows": rows,
        "next_after": events[-1].seq if more and events else None,
        "after": after,
    }
    template = "transcripts/run.html"
    if request.htmx and after:
        return render(request, template + "#events", context)
    points, path, total = _chart(selectors.run_output_series(run))
    end = run.finished_at or (timezone.now() if run.is_open else None)
    context.update(
        ttft=_seconds(run.started_at, run.first_event_at),
        duration=_seconds(run.started_at, end),
        chart_points=points,
        chart_path=path,
        chart_total=total,
        chart_width=CHART_WIDTH,
        chart_height=CHART_HEIGHT,
        conversation_url=reverse("conversation", args=[run.thread_id]),
        stream_url=f"/api/v1/runs/{run.id}/stream",
        usage_rows=[(k, v) for k, v in (run.usage or {}).items()]
        if isinstance(run.usage, dict)
        else [],
    )
    if request.htmx:
        template += "#live"
    return render(request, template, context)

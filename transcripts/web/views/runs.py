"""A run: its timeline page, and the live block the conversation shows while it streams."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Subquery
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from transcripts import selectors
from transcripts.models import Event, Message, Run, RunStatus
from transcripts.web.access import get_run_for_user, login_required
from transcripts.web.http import HtmxHttpRequest, render_live_block, to_conversation
from transcripts.web.presenters.runs import event_rows, output_chart, seconds_between

TEMPLATE = "transcripts/run.html"
EVENTS_PER_PAGE = 100


@login_required
@require_GET
def run_detail(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """A run's status, timings, usage and paged event log; live over SSE while it streams."""
    first_message = Message.objects.filter(run_id=OuterRef("pk")).order_by("position")
    runs = (
        Run.objects.select_related("thread")
        .defer("snapshot", "thread__metadata")
        .annotate(first_message_id=Subquery(first_message.values("id")[:1]))
    )
    run, _ = get_run_for_user(request, run_id, runs=runs)
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
    context: dict[str, Any] = {
        "run": run,
        "thread": run.thread,
        "rows": event_rows(run, events),
        "next_after": events[-1].seq if more and events else None,
        "after": after,
    }
    if request.htmx and after:
        return render(request, f"{TEMPLATE}#events", context)
    end = run.finished_at or (timezone.now() if run.is_open else None)
    context.update(
        ttft=seconds_between(run.started_at, run.first_event_at),
        duration=seconds_between(run.started_at, end),
        chart=output_chart(selectors.run_output_series(run)),
        conversation_url=reverse("conversation", args=[run.thread_id]),
        stream_url=f"/api/v1/runs/{run.id}/stream",
        usage_rows=list(run.usage.items()) if isinstance(run.usage, dict) else [],
    )
    template = TEMPLATE
    if request.htmx:
        template += "#live"
    return render(request, template, context)


@login_required
@require_GET
def run_live(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The live block's body; once the run is committed, the conversation instead.

    Reading changes nothing: a run whose worker stopped responding is shown as such until a
    worker's sweeper fails it (or queues it again).
    """
    run, access = get_run_for_user(request, run_id)
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        return to_conversation(request, run.thread_id)
    return render_live_block(request, run, run.thread, access)

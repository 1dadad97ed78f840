"""A run: its trace page, and the live block the conversation shows while it streams."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from transcripts import selectors
from transcripts.models import Run, RunStatus
from transcripts.selectors.experiments import experiment_of_run
from transcripts.selectors.live import committed_leaf
from transcripts.selectors.run_page import events_carry_timing, run_place, run_projection
from transcripts.selectors.score_views import run_scores
from transcripts.selectors.trace import run_trace
from transcripts.web.access import get_run_for_user, login_required
from transcripts.web.http import HtmxHttpRequest, render_live_block, to_conversation
from transcripts.web.presenters.judgement import score_lines
from transcripts.web.presenters.runs import (
    CONTINUED,
    NO_TIMING,
    content_items,
    continues,
    event_rows,
    fork_label,
    run_heading,
)
from transcripts.web.presenters.trace import trace_view, usage_rows

TEMPLATE = "transcripts/run.html"
EVENTS_PER_PAGE = 100


@login_required
@require_GET
def run_detail(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """A run as a trace (its place in the thread, spans on a waterfall, its messages rendered
    like the conversation with their raw text behind a toggle) with its raw event log behind
    another; live over SSE while it streams.

    htmx asks for parts by their target: "live" (the trace, on each event while the run is
    open), "run-trace" (everything, once the run's final status arrives) or a page of the raw
    log (?after=).
    """
    run, _ = get_run_for_user(request, run_id, runs=selectors.trace_page_runs())
    try:
        after = int(request.GET.get("after") or "0")
    except ValueError:
        after = -1
    if not 0 <= after < 2**62:
        return HttpResponseBadRequest("after: a sequence number (0 or more) was expected.")
    context: dict[str, Any] = {"run": run, "thread": run.thread, "after": after}
    if request.htmx and after:
        page = _log_page(run, after, timed=events_carry_timing(run))
        return render(request, f"{TEMPLATE}#events", {**context, **page})
    part = ""
    if request.htmx:
        part = "#trace" if request.htmx.target == "run-trace" else "#live"
    trace = run_trace(run, now=timezone.now())
    if part != "#live":  # the trace alone needs no page of the log
        context.update(_log_page(run, after, timed=trace.timed))
    place = run_place(run)
    shown = {"Input tokens", "Output tokens"}  # the facts show these already
    context.update(
        trace=trace_view(trace),
        heading=run_heading(run, place),
        fork=place.fork,
        fork_label=fork_label(place.fork),
        items=content_items(run.thread, run, run_projection(run)),
        no_timing=NO_TIMING,
        ttft_note=CONTINUED if continues(run) else "",
        ttft=trace.time_to_first_token,
        duration=trace.root.seconds,
        conversation_url=reverse("conversation", args=[run.thread_id]),
        stream_url=f"/api/v1/runs/{run.id}/stream",
        usage_rows=[row for row in usage_rows(run.usage) if row[0] not in shown],
    )
    if part != "#live":
        context["score_lines"] = score_lines(run_scores(run))
        context["experiment"] = experiment_of_run(run)
    return render(request, TEMPLATE + part, context)


def _log_page(run: Run, after: int, *, timed: bool) -> dict[str, Any]:
    """A page of the raw event log after seq `after` (timed False: the events carry no
    timing), and where the next one starts."""
    events = selectors.event_page(run, after=after, limit=EVENTS_PER_PAGE + 1)
    more = len(events) > EVENTS_PER_PAGE
    events = events[:EVENTS_PER_PAGE]
    return {
        "rows": event_rows(run, events, timed=timed),
        "next_after": events[-1].seq if more and events else None,
    }


@login_required
@require_GET
def run_live(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The live block's body; once the run is committed, the conversation instead.

    Reading changes nothing: a run whose worker stopped responding is shown as such until a
    worker's sweeper fails it (or queues it again).
    """
    run, access = get_run_for_user(request, run_id)
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        if request.GET.get("remote"):
            return _remote_commit(request, run)
        return to_conversation(request, run.thread_id)
    return render_live_block(request, run, run.thread, access)


def _remote_commit(request: HtmxHttpRequest, run: Run) -> HttpResponse:
    """A run that arrived while the page was open (?remote=1, with ?tip= the last message the
    page showed) has committed: the conversation at its answer when it continues the branch
    being read, else a notice in its place that offers its branch (the reader's place kept)."""
    leaf, active = committed_leaf(run)
    if leaf is not None and (run.fork_from_id or "") == request.GET.get("tip", "-"):
        return to_conversation(request, run.thread_id, None if active else leaf)
    if leaf is None:
        return to_conversation(request, run.thread_id)
    url = reverse("conversation", args=[run.thread_id])
    return render(request, "transcripts/live_committed.html", {"url": url, "leaf": leaf})

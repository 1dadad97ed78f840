"""A project's dashboard: runs, failures, tokens, cost and latency over a chosen window."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from transcripts.errors import InvalidInput
from transcripts.selectors.score_stats import score_averages
from transcripts.selectors.stats import Window, parse_window, project_stats
from transcripts.web.access import get_project_for_user, login_required
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.dashboard import dashboard, score_charts

TEMPLATE = "transcripts/dashboard.html"
# The windows offered, ending now; "custom" reads the from and to dates.
WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
WINDOW_LABELS = {
    "24h": "Last 24 hours",
    "7d": "Last 7 days",
    "30d": "Last 30 days",
    "custom": "From … to",
}
DEFAULT = "7d"


def _window(choice: str, start: str, end: str) -> Window:
    """The window the form asks for (InvalidInput: an unknown choice or bad dates)."""
    now = timezone.now()
    if choice == "custom":
        return parse_window(start, end, now, WINDOWS[DEFAULT])
    if choice not in WINDOWS:
        raise InvalidInput("window must be one of 24h, 7d, 30d or custom", field="window")
    return parse_window("", "", now, WINDOWS[choice])


@login_required
@require_GET
def dashboard_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Any member sees the charts; hidden threads count for those who may see them."""
    project, access = get_project_for_user(request, slug)
    choice = request.GET.get("window") or DEFAULT
    start, end = request.GET.get("from", "").strip(), request.GET.get("to", "").strip()
    context: dict[str, Any] = {
        "project": project,
        "choice": choice,
        "choices": WINDOW_LABELS,
        "start": start,
        "end": end,
    }
    status = 200
    try:
        window = _window(choice, start, end)
    except InvalidInput as refused:
        context["error"] = refused.message
        status = 422
    else:
        stats = project_stats(project.pk, window, include_hidden=access.sees_hidden)
        context["board"] = dashboard(stats, project.slug)
        averages = score_averages(project.pk, window, include_hidden=access.sees_hidden)
        context["score_charts"] = score_charts(averages, window, project.slug)
    return render(request, TEMPLATE, context, status=status)

"""A project's datasets page: the filters, the counts, the first rows and the download link."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from transcripts import datasets
from transcripts.datasets.query import BRANCHES, DATED, PAIRS_FROM, PREFERENCES
from transcripts.errors import InvalidInput
from transcripts.web.access import get_project_for_user, login_required
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.datasets import preview_table

TEMPLATE = "transcripts/datasets.html"
PREVIEW_ROWS = 5
# The query string names the page shares with the API endpoint.
FILTERS = (
    "format", "since", "until", "dated", "model", "agent", "rated", "q", "branches",
    "minScore", "feedback", "from", "name",
)  # fmt: skip


def _download_url(slug: str, query: datasets.DatasetQuery, values: dict[str, str]) -> str:
    """The API address of the same dataset, which a logged-in browser may read."""
    params = {"project": slug, **{k: v for k, v in values.items() if v}, "format": query.format}
    return f"{reverse('api-v1:export_dataset', args=[query.kind])}?{urlencode(params)}"


@login_required
@require_GET
def datasets_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Any member may export what they may read: hidden threads never enter a dataset."""
    project, _ = get_project_for_user(request, slug)
    kind = request.GET.get("kind") or PREFERENCES
    values = {name: request.GET.get(name, "").strip() for name in FILTERS}
    context: dict[str, Any] = {
        "project": project,
        "kind": kind,
        "values": values,
        "formats": datasets.FORMATS,
        "dated_choices": DATED,
        "branch_choices": BRANCHES,
        "pairs_from_choices": PAIRS_FROM,
    }
    status = 200
    try:
        query = datasets.parse_query(kind, values)
    except InvalidInput as refused:
        context["error"] = refused.message
        status = 422
    else:
        summary = datasets.summarize(project, query, preview=PREVIEW_ROWS)
        context.update(
            query=query,
            summary=summary,
            skipped=sorted(summary.skipped.items()),
            preview=preview_table(query.kind, query.format, summary.preview),
            download_url=_download_url(project.slug, query, values),
        )
    template = f"{TEMPLATE}#results" if request.htmx else TEMPLATE
    return render(request, template, context, status=status)

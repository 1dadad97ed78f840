"""The tree map of a thread."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from transcripts import selectors
from transcripts.web.access import get_thread_for_user, login_required
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.tree import tree_map
from transcripts.web.presenters.tree_html import outline_html


@login_required
@require_GET
def tree(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """The whole conversation tree as an outline: the active path, the branches nested below."""
    thread, _ = get_thread_for_user(request, thread_id)
    laid_out, lines = tree_map(
        thread,
        selectors.tree_rows(thread),
        selectors.runs_without_messages(thread),
        selectors.message_previews,
    )
    context = {
        "thread": thread,
        "tree": laid_out,
        "outline": outline_html(lines),
        "url": reverse("conversation", args=[thread.id]),
    }
    template = "transcripts/tree.html"
    if request.htmx:
        template += "#tree"
    return render(request, template, context)

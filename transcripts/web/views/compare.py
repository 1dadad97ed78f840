"""Compare: every branch at a fork point (or any two runs) side by side, and rating a run."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from transcripts import selectors
from transcripts.errors import DomainError
from transcripts.ledger import moderation, ratings
from transcripts.models import Run, Thread
from transcripts.permissions import Access, Role
from transcripts.selectors.scores import message_scores, score_configs
from transcripts.web.access import (
    get_run_for_user,
    get_thread_for_user,
    login_required,
    message_of,
    require_role,
)
from transcripts.web.http import HtmxHttpRequest, safe_next
from transcripts.web.presenters.compare import (
    MAX_COLUMNS,
    ROOT,
    Column,
    columns,
    compare_url,
    ordered,
    pair_url,
)
from transcripts.web.presenters.compare_text import SIMILARITY_FLOOR
from transcripts.web.presenters.runs import generation_refusal, role_refusal
from transcripts.web.presenters.score_panel import panel_configs, score_panel
from transcripts.web.presenters.scores import score_view

TEMPLATE = "transcripts/compare.html"
MAX_MORE_LINKS = 40  # runs beyond the columns listed by name; the rest are counted


def _render(
    request: HtmxHttpRequest, thread: Thread, access: Access, context: dict[str, Any]
) -> HttpResponse:
    if thread.hidden and not request.htmx:
        moderation.record_hidden_view(user=request.user, thread=thread)
    params = request.GET.copy()
    params["view"] = "rendered"
    rendered_url = f"{request.path}?{params.urlencode()}"
    params["view"] = "diff"
    context.update(
        thread=thread,
        url=reverse("conversation", args=[thread.id]),
        here=request.get_full_path(),
        rendered_url=rendered_url,
        diff_url=f"{request.path}?{params.urlencode()}",
        show_diff=request.GET.get("view") != "rendered",
        similarity_floor=SIMILARITY_FLOOR,
        # Restore is offered to editors where the thread takes it (not locked, not hidden),
        # rating to editors.
        restore_refusal=role_refusal(access) or generation_refusal(thread),
        may_rate=access.can_edit,
    )
    _score_panels(request, thread, access, context["columns"])
    template = TEMPLATE
    if request.htmx:
        template += "#compare"
    return render(request, template, context)


def _score_panels(
    request: HtmxHttpRequest, thread: Thread, access: Access, shown: list[Column]
) -> None:
    """The stored answers of the thread's columns: their scores and, for editors, the score
    panel people judge a branch's answer with (as in the conversation)."""
    items = [
        card.item
        for column in shown
        if column.materialized and column.run.thread_id == thread.id
        for card in column.cards
        if card.item.message.role == "assistant"
    ]
    if not items:
        return
    scores = message_scores(thread, [item.message.id for item in items])
    configs = panel_configs(score_configs(thread.project)) if access.can_edit else []
    for item in items:
        mine = scores.get(item.message.id, [])
        item.scores = [score_view(score) for score in mine]
        item.score_panel = score_panel(
            item.message, slug=thread.project.slug, configs=configs, scores=mine,
            user_id=request.user.pk, access=access,
        )  # fmt: skip


@login_required
@require_GET
def compare_fork(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Every branch below one fork point: the active one first, then the alternatives."""
    thread, access = get_thread_for_user(request, thread_id)
    fork = None if message_id == ROOT else message_of(thread, message_id)
    runs = ordered(selectors.branch_runs(thread, fork), fork.id if fork else None)
    shown, more = runs[:MAX_COLUMNS], runs[MAX_COLUMNS:]
    url = reverse("conversation", args=[thread.id])
    contents = selectors.branch_contents(shown, below_depth=fork.depth if fork else -1)
    context = {
        "fork": fork,
        "fork_url": f"{url}?leaf={fork.id}#m-{fork.id}" if fork is not None else url,
        "columns": columns(thread, shown, contents, reader_id=request.user.pk),
        # The first of the rest get a link each (to compare with column 1); the others a count.
        "more": [(run, pair_url(shown[0], run)) for run in more[:MAX_MORE_LINKS]],
        "more_count": len(more),
        "more_unlisted": max(len(more) - MAX_MORE_LINKS, 0),
    }
    return _render(request, thread, access, context)


@login_required
@require_GET
def compare_runs(request: HtmxHttpRequest) -> HttpResponse:
    """Two runs side by side (?a=&b=), the second compared to the first."""
    # With a's project: the score panels name it (no query per page outside selectors).
    with_project = Run.objects.select_related("thread__project").defer("snapshot")
    a, access = get_run_for_user(request, request.GET.get("a", ""), runs=with_project)
    b, _ = get_run_for_user(request, request.GET.get("b", ""))
    # Where one run continues from a message of the other, show only what follows it.
    below_depth = selectors.fork_depth(a, b) if a.thread_id == b.thread_id else -1
    contents = selectors.branch_contents([a, b], below_depth=below_depth)
    context = {
        "other_thread": b.thread if b.thread_id != a.thread_id else None,
        "fork": None,
        "pair": True,
        "fork_url": reverse("conversation", args=[a.thread_id]),
        "columns": columns(a.thread, [a, b], contents, reader_id=request.user.pk),
        "more": [],
    }
    return _render(request, a.thread, access, context)


class RatingForm(forms.Form):
    """Mark (or unmark) a run as preferred, with an optional note."""

    preferred = forms.BooleanField(required=False)
    note = forms.CharField(required=False, max_length=ratings.MAX_NOTE)


@login_required
@require_POST
def rate(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Mark a run as the reader's preferred alternative (or unmark it), with a note."""
    run, access = get_run_for_user(request, run_id)
    require_role(access, Role.EDITOR, "rate a run")
    form = RatingForm(request.POST)
    error = ""
    if not form.is_valid():
        error = "Could not save the rating: " + " ".join(
            str(e) for errors in form.errors.values() for e in errors
        )
    else:
        try:
            ratings.rate_run(
                user=request.user,
                run=run,
                preferred=form.cleaned_data["preferred"],
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            error = f"Could not save the rating: {exc.message}"
    if error:
        messages.error(request, error)
    elif form.cleaned_data.get("preferred"):
        messages.success(request, "Marked as your preferred run.")
    else:
        messages.success(request, "Saved.")
    # htmx follows the redirect with its headers, so the compare view answers with its partial.
    return HttpResponseRedirect(safe_next(request, compare_url(run)), status=303)

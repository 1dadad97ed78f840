"""A conversation: a window of one branch, its switchers, actions, open run and export menu."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from transcripts import selectors
from transcripts.formats import FORMATS
from transcripts.generation.generators import CHOICES, EXTERNAL
from transcripts.ledger import moderation
from transcripts.models import Message, ScoreConfig, Thread
from transcripts.permissions import Access
from transcripts.selectors.failed_runs import unanswered_failures
from transcripts.selectors.forks import fork_source, forks_of
from transcripts.selectors.scores import (
    feedback_summaries,
    message_scores,
    score_configs,
    thread_scores,
)
from transcripts.web.access import get_thread_for_user, login_required, message_of, threads_for_user
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.messages import MessageItem, judge_items, message_items
from transcripts.web.presenters.organise import organise_thread
from transcripts.web.presenters.runs import LiveRun, failed_live_run, open_live_run, options_for
from transcripts.web.presenters.score_panel import panel_configs, score_panel, thread_part
from transcripts.web.presenters.threads import RecentThreads


def _open_run(thread: Thread, items: list[MessageItem], access: Access) -> LiveRun | None:
    """The thread's open run, if any, as its live block placed in the window."""
    run = selectors.open_run_of(thread)
    if run is None:
        return None
    facts = selectors.live_run_facts(run, thread, worker_needed=run.generator != EXTERNAL)
    return open_live_run(run, facts, thread, items, access=access)


def _failed_runs(thread: Thread, items: list[MessageItem], access: Access) -> list[LiveRun]:
    """The failed generations at the window's fork points that nothing followed, shown there
    (with the thread's start when the window begins at it)."""
    root = not items or items[0].message.depth == 0
    ids = [item.message.id for item in items]
    return [
        failed_live_run(run, selectors.live_run_facts(run, thread), thread, access=access)
        for run in unanswered_failures(thread, ids, root=root)
    ]


def last_choice(thread: Thread) -> dict[str, Any]:
    """The generator, model and parameters the thread's last generated run used."""
    return selectors.last_choice(thread, among=CHOICES)


TEMPLATE = "transcripts/conversation.html"
WINDOW = 50  # messages of the path sent at once
AROUND_BEFORE = 15  # around a permalink: this many above it ...
AROUND_AFTER = 35  # ... and this many below


def export_formats() -> list[tuple[str, str]]:
    """(query, label) of every export a thread offers: each format, and ThreadProtocol with
    every branch as JSON Lines."""
    choices = [
        (f"format={key}", spec.label) for key, spec in FORMATS.items() if spec.exporter is not None
    ]
    choices.append(
        ("format=threadprotocol&branches=all", "ThreadProtocol, every branch (JSON Lines)")
    )
    return choices


def _panel_configs(thread: Thread, access: Access) -> list[ScoreConfig]:
    """The configs the Score panels offer a reader who may score (none for the others)."""
    return panel_configs(score_configs(thread.project)) if access.can_edit else []


def _items(
    request: HtmxHttpRequest,
    thread: Thread,
    messages: list[Message],
    readable: QuerySet[Thread],
    access: Access,
    configs: list[ScoreConfig] | None = None,
) -> list[MessageItem]:
    """The cards of messages: switchers, forks, and the answers' feedback, scores and score
    panels (configs: the project's panel configs when the caller read them already)."""
    items = message_items(thread, messages, siblings=selectors.siblings_of(thread, messages))
    ids = [m.id for m in messages]
    forks = forks_of(thread, ids, readable)
    for item in items:
        item.forks = forks.get(item.message.id)
    answers = [m.id for m in messages if m.role == "assistant"]
    scores = message_scores(thread, ids) if ids else {}
    judge_items(
        items, feedback_summaries(thread, answers, request.user.pk) if answers else {}, scores
    )
    if configs is None:
        configs = _panel_configs(thread, access) if answers else []
    for item in items:
        item.score_panel = score_panel(
            item.message, slug=thread.project.slug, configs=configs,
            scores=scores.get(item.message.id, ()), user_id=request.user.pk, access=access,
        )  # fmt: skip
    return items


def _more(
    request: HtmxHttpRequest, thread: Thread, access: Access, direction: str, origin_id: str
) -> HttpResponse:
    """The messages just above or below origin on its branch (the pagers' htmx requests)."""
    origin = message_of(thread, origin_id)
    context: dict[str, Any] = {
        "thread": thread,
        "url": reverse("conversation", args=[thread.id]),
        # The branch being read, so a Restore on this page brings back exactly that branch.
        "leaf": request.GET.get("leaf", ""),
    }
    if direction == "before":
        messages = selectors.branch_window(origin, before=WINDOW, after=0)[:-1]
        context["has_earlier"] = bool(messages) and messages[0].depth > 0
    else:
        messages = selectors.branch_window(origin, before=0, after=WINDOW + 1)[1:]
        context["has_later"] = len(messages) > WINDOW
        messages = messages[:WINDOW]
    context["items"] = _items(
        request, thread, messages, threads_for_user(request, thread.project)[0], access
    )
    context["can_fork"] = access.can_edit and not thread.hidden
    context["generation_options"] = options_for(thread, access, last_choice)
    partial = "earlier" if direction == "before" else "later"
    return render(request, f"{TEMPLATE}#{partial}", context)


@login_required
@require_GET
def conversation(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """A window of one branch of the thread (the active one unless ?leaf= says otherwise)."""
    thread, access = get_thread_for_user(request, thread_id)
    direction = request.GET.get("dir", "")
    origin_id = request.GET.get("from", "")
    if direction in ("before", "after") and origin_id:
        return _more(request, thread, access, direction, origin_id)
    if thread.hidden and not request.htmx:
        # A moderator reading a hidden thread is itself recorded (everyone else gets a 404
        # above): an audit record, not a change to what is read.
        moderation.record_hidden_view(user=request.user, thread=thread)
    leaf_id = request.GET.get("leaf", "")
    anchor = message_of(thread, leaf_id) if leaf_id else None
    has_later = False
    if anchor is not None:
        messages = selectors.branch_window(anchor, before=AROUND_BEFORE, after=AROUND_AFTER + 1)
        below = [m for m in messages if m.depth > anchor.depth]
        has_later = len(below) > AROUND_AFTER
        if has_later:
            messages = messages[:-1]
    elif thread.head is not None:
        messages = selectors.active_tail(thread, head_depth=thread.head.depth, count=WINDOW)
    else:
        messages = []
    readable, _ = threads_for_user(request, thread.project)
    configs = _panel_configs(thread, access)  # read once: the answers' panels and the thread's
    items = _items(request, thread, messages, readable, access, configs)
    context = {
        "thread": thread,
        "url": reverse("conversation", args=[thread.id]),
        "leaf": leaf_id,
        "items": items,
        "has_earlier": bool(messages) and messages[0].depth > 0,
        "has_later": has_later,
        "anchor": anchor,
        "off_active": anchor is not None and not anchor.active,
        "tree_url": reverse("tree", args=[thread.id]),
        "generation_options": options_for(thread, access, last_choice),
        "open_run": _open_run(thread, items, access),
        "failed_runs": _failed_runs(thread, items, access),
        "export_formats": export_formats(),
        "recent_threads": RecentThreads(lambda n: selectors.recent_threads(readable, n), thread.id),
        # Share links: editors open the panel of the branch being read (views/shares.py).
        "shares_url": reverse("thread_shares", args=[thread.id]) if access.can_edit else "",
        # New thread from here (editors; not from a hidden thread), and where this one came from.
        "can_fork": access.can_edit and not thread.hidden,
        "fork_source": fork_source(thread, readable),
        "organise": organise_thread(request.user, thread, access),
        # The scores on the whole thread, and its score panel for editors (views/score_panel.py).
        "thread_scores": thread_part(
            thread,
            configs=configs,
            scores=thread_scores(thread),
            user_id=request.user.pk,
            access=access,
        ),
    }
    template = TEMPLATE
    if request.htmx:
        template += "#conversation"
    return render(request, template, context)

"""Annotation queues (issue 28): a project's queues and the form that makes one, a queue's
page (progress, close), and the review page that gives a reviewer one item at a time.

Every member reads the queues; moderators and admins make and close them; the assigned
members (nobody assigned: every editor and up) review. The review page's GET only reads: the
item a reviewer holds is claimed, scored and skipped by POSTs, each answered with a redirect
to the page (which then shows the next item) or, when refused, the page again with the error.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from transcripts import selectors
from transcripts.errors import DomainError, InvalidInput, PermissionDenied
from transcripts.ledger import queues as queue_services
from transcripts.ledger.queues import MAX_REVIEWS_PER_ITEM, ItemSource, QueueSpec
from transcripts.ledger.scores import Author
from transcripts.models import AnnotationQueue, Project, QueueReview, ScoreConfig
from transcripts.permissions import Access, Role
from transcripts.selectors import queues as queue_reads
from transcripts.selectors.queues import Reviewer
from transcripts.selectors.scores import score_configs
from transcripts.web.access import get_project_for_user, login_required, require_role
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.messages import message_items
from transcripts.web.presenters.queues import queue_rows, score_fields
from transcripts.web.presenters.score_panel import panel_configs

LIST_TEMPLATE = "transcripts/queues.html"
QUEUE_TEMPLATE = "transcripts/queue.html"
REVIEW_TEMPLATE = "transcripts/queue_review.html"
_IDS = re.compile(r"[\s,]+")


class QueueForm(forms.Form):
    """A new queue: its name, configs, members, reviews per item, and where its items come
    from (a thread-list filter or ids)."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(max_length=2000, required=False, widget=forms.Textarea)
    configs = forms.MultipleChoiceField(
        label="Scores", error_messages={"required": "Choose at least one score."}
    )
    members = forms.MultipleChoiceField(label="Reviewers", required=False)
    reviews_per_item = forms.IntegerField(
        label="Reviews per item", min_value=1, max_value=MAX_REVIEWS_PER_ITEM, initial=1
    )
    filter = forms.CharField(label="Thread-list filter", max_length=2000, required=False)
    ids = forms.CharField(
        label="Thread or message ids", max_length=30000, required=False, widget=forms.Textarea
    )

    def __init__(self, *args: Any, configs: list[ScoreConfig], members: list[Any], **kw: Any):
        super().__init__(*args, **kw)
        self.fields["configs"].choices = [(str(c.pk), c.name) for c in configs]  # type: ignore[attr-defined]
        self.fields["members"].choices = [  # type: ignore[attr-defined]
            (str(m.user_id), m.user.get_username()) for m in members
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not (data.get("filter") or "").strip() and not (data.get("ids") or "").strip():
            raise forms.ValidationError("Give a thread-list filter or some ids.")
        return data


def _errors(form: forms.Form) -> str:
    """The form's errors in one sentence per field."""
    return " ".join(
        f"{form.fields[name].label or name.capitalize()}: {' '.join(str(e) for e in errors)}"
        if name in form.fields
        else " ".join(str(e) for e in errors)
        for name, errors in form.errors.items()
    )


def _queue_form(project: Project, data: Any = None, filter_text: str = "") -> QueueForm:
    """The create form with the project's people-written configs and its members (its
    filter filled in with filter_text: a link from a thread list passes its query string)."""
    members = sorted(selectors.members_of(project), key=lambda m: m.user.get_username())
    configs = panel_configs(score_configs(project))
    initial = {"filter": filter_text[:2000]}
    return QueueForm(data, configs=configs, members=members, initial=initial)


def _list(
    request: HtmxHttpRequest,
    project: Project,
    access: Access,
    form: QueueForm,
    *,
    status: int = 200,
    error: str = "",
) -> HttpResponse:
    context = {
        "project": project,
        "access": access,
        "rows": queue_rows(queue_reads.queues_of(project)),
        "form": form,
        "error": error,
    }
    return render(request, LIST_TEMPLATE, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def queues_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The project's queues with their progress; POST makes one (moderators and admins)."""
    project, access = get_project_for_user(request, slug)
    if request.method == "GET":
        filter_text = request.GET.get("filter", "")
        return _list(request, project, access, _queue_form(project, filter_text=filter_text))
    require_role(access, Role.MODERATOR, "create annotation queues")
    form = _queue_form(project, request.POST)
    if not form.is_valid():
        return _list(request, project, access, form, status=422, error=_errors(form))
    data = form.cleaned_data
    spec = QueueSpec(
        name=data["name"],
        description=data["description"],
        config_ids=tuple(int(c) for c in data["configs"]),
        member_ids=tuple(int(m) for m in data["members"]),
        reviews_per_item=data["reviews_per_item"],
    )
    source = ItemSource(
        filter=data["filter"], any_ids=tuple(i for i in _IDS.split(data["ids"]) if i)
    )
    try:
        queue, added = queue_services.create_queue(
            project=project, author=Author(user=request.user), spec=spec, source=source
        )
    except DomainError as exc:
        return _list(request, project, access, form, status=exc.status, error=exc.message)
    messages.success(request, f"Queue “{queue.name}” created: {added.text}.")
    return HttpResponseRedirect(reverse("project_queue", args=[slug, queue.pk]), status=303)


def _queue_of(request: HtmxHttpRequest, slug: str, queue_id: int) -> tuple[AnnotationQueue, Access]:
    """The project's queue for a member, or a 404 (for outsiders, and for another project's)."""
    project, access = get_project_for_user(request, slug)
    queue = queue_reads.queue_in(project, queue_id)
    if queue is None:
        raise Http404("no such queue")
    queue.project = project
    return queue, access


@login_required
@require_http_methods(["GET"])
def queue_page(request: HtmxHttpRequest, slug: str, queue_id: int) -> HttpResponse:
    """A queue: what it asks, who reviews, its progress; close for moderators and admins."""
    queue, access = _queue_of(request, slug, queue_id)
    context = {
        "project": queue.project,
        "queue": queue,
        "access": access,
        "configs": queue_reads.queue_configs(queue),
        "members": queue_reads.queue_member_names(queue),
        "progress": queue_reads.progress(queue, timezone.now()),
        "may_review": queue_reads.may_review(request.user, queue),
    }
    return render(request, QUEUE_TEMPLATE, context)


@login_required
@require_POST
def close_queue(request: HtmxHttpRequest, slug: str, queue_id: int) -> HttpResponse:
    """Close the queue (moderators and admins): nobody is given its items again."""
    queue, access = _queue_of(request, slug, queue_id)
    require_role(access, Role.MODERATOR, "close annotation queues")
    queue_services.close_queue(queue=queue, author=Author(user=request.user))
    messages.success(request, f"Queue “{queue.name}” closed.")
    return HttpResponseRedirect(reverse("project_queue", args=[slug, queue.pk]), status=303)


# --- the review page -------------------------------------------------------------------------


def _reviewer(request: HtmxHttpRequest, slug: str, queue_id: int) -> tuple[AnnotationQueue, Access]:
    """The queue for one of its reviewers: a 404 for outsiders, a 403 for other members."""
    queue, access = _queue_of(request, slug, queue_id)
    if not queue_reads.may_review(request.user, queue):
        if queue_reads.queue_member_names(queue):
            raise PermissionDenied(
                "This queue is reviewed by the members assigned to it; you are not one of them.",
                action="review in this queue",
            )
        require_role(access, Role.EDITOR, "review in this queue")
    return queue, access


def _review_page(
    request: HtmxHttpRequest,
    queue: AnnotationQueue,
    access: Access,
    *,
    status: int = 200,
    answers: dict[str, str] | None = None,
    comment: str = "",
    error: tuple[str, str] = ("", ""),
) -> HttpResponse:
    """The page: the held item (its branch and the form), else the way to the next one."""
    now = timezone.now()
    held: QueueReview | None = None
    if queue.closed_at is None:
        who = Reviewer(user_id=request.user.pk, sees_hidden=access.sees_hidden)
        held = queue_reads.held_review(queue, who, now)
    context: dict[str, Any] = {
        "project": queue.project,
        "queue": queue,
        "progress": queue_reads.progress(queue, now),
        "held": held,
        "nothing_for_me": request.GET.get("empty") == "1",
        "error": error[1],
    }
    if held is not None:
        thread = held.item.thread
        context.update(
            thread=thread,
            items=message_items(thread, queue_reads.review_branch(held.item)),
            fields=score_fields(queue_reads.queue_configs(queue, live=True), answers or {}, error),
            comment=comment,
        )
    return render(request, REVIEW_TEMPLATE, context, status=status)


def _item_id(request: HtmxHttpRequest) -> int:
    """The POSTed item id, or a 422."""
    try:
        return int(request.POST.get("item", ""))
    except ValueError:
        raise InvalidInput("Which item? The form lost its item id.", field="item") from None


@login_required
@require_http_methods(["GET", "POST"])
def review_page(request: HtmxHttpRequest, slug: str, queue_id: int) -> HttpResponse:
    """GET: the item the reviewer holds, or the way to the next. POST action=next claims the
    next item, action=submit scores the held one, action=skip passes on it; each then takes
    the next item and goes back to the page."""
    queue, access = _reviewer(request, slug, queue_id)
    if request.method == "GET":
        return _review_page(request, queue, access)
    author = Author(user=request.user)
    action = request.POST.get("action", "")
    if action == "submit":
        configs = queue_reads.queue_configs(queue, live=True)
        answers = {c.name: request.POST.get(f"score-{c.pk}", "") for c in configs}
        comment = request.POST.get("comment", "")
        try:
            queue_services.submit_review(
                queue=queue,
                item_id=_item_id(request),
                author=author,
                answers=answers,
                comment=comment,
            )
        except InvalidInput as refused:
            given = {f"score-{c.pk}": answers[c.name] for c in configs}
            return _review_page(
                request, queue, access, status=422, answers=given, comment=comment,
                error=(str(refused.details.get("field", "")), refused.message),
            )  # fmt: skip
    elif action == "skip":
        queue_services.skip_item(queue=queue, item_id=_item_id(request), author=author)
    elif action != "next":
        raise InvalidInput("Unknown action: next, submit or skip.", field="action")
    url = reverse("project_queue_review", args=[slug, queue.pk])
    if queue.closed_at is None and queue_services.claim_next(queue=queue, author=author) is None:
        url += "?empty=1"
    return HttpResponseRedirect(url, status=303)

"""Judgement from the pages (issue 28): feedback on an answer (thumbs up or down, with an
optional comment), and a project's score configs page (its admins create and archive them;
every member reads it). Plain POST forms that work without JavaScript; htmx swaps an answer's
feedback part in place."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from transcripts.errors import DomainError, InvalidInput
from transcripts.ledger import scores as ledger_scores
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import Message, Project, ScoreDataType, ScoreWriters
from transcripts.permissions import Access, Role
from transcripts.selectors import scores as selectors
from transcripts.web.access import (
    get_message_for_user,
    get_project_for_user,
    login_required,
    require_role,
)
from transcripts.web.http import HtmxHttpRequest, safe_next
from transcripts.web.presenters.scores import config_rows, feedback_view

FEEDBACK = "transcripts/feedback.html#feedback"
PAGE = "transcripts/scores.html"
RATINGS = {"up": "helpful", "down": "not helpful"}


class FeedbackForm(forms.Form):
    """A thumb ("up", "down", or "none" to take it back) and, from the comment form, a
    comment (absent from the thumbs' forms, which keep the comment given before)."""

    rating = forms.ChoiceField(choices=[("up", "up"), ("down", "down"), ("none", "none")])
    comment = forms.CharField(required=False, max_length=ledger_scores.MAX_COMMENT, strip=False)


def _form_error(form: forms.Form) -> InvalidInput:
    """The first problem of an invalid form, naming its field."""
    name, errors = next(iter(form.errors.items()))
    return InvalidInput(f"{name}: {errors[0]}", field=name)


def _feedback_part(request: HtmxHttpRequest, message: Message, done: str) -> HttpResponse:
    """The answer's feedback part as it is now, saying what was just done."""
    thread = message.thread
    ids = [message.id]
    summary = selectors.feedback_summaries(thread, ids, request.user.pk).get(message.id)
    view = feedback_view(thread.id, message.id, summary, done=done)
    return render(request, FEEDBACK, {"fb": view, "m": message, "thread": thread})


@login_required
@require_POST
def feedback(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Give, change or take back the reader's feedback on an answer (viewers and up)."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.VIEWER, "give feedback")
    form = FeedbackForm(request.POST)
    if not form.is_valid():
        raise _form_error(form)
    rating = form.cleaned_data["rating"]
    if rating == "none":
        ledger_scores.remove_feedback(user=request.user, message=message)
        done = "Your feedback is removed."
    else:
        comment = form.cleaned_data["comment"] if "comment" in request.POST else None
        ledger_scores.give_feedback(
            user=request.user, message=message, up=rating == "up", comment=comment
        )
        done = f"Saved: {RATINGS[rating]}."
    if request.htmx:
        return _feedback_part(request, message, done)
    messages.success(request, done)
    here = reverse("conversation", args=[thread_id]) + f"?leaf={message.id}#m-{message.id}"
    return HttpResponseRedirect(safe_next(request, here), status=303)


# --- the score configs page ------------------------------------------------------------------


class ConfigForm(forms.Form):
    """A new score config (the ledger checks that the parts make sense together)."""

    name = forms.CharField(max_length=ledger_scores.MAX_NAME)
    data_type = forms.ChoiceField(choices=ScoreDataType.choices)
    min_value = forms.FloatField(required=False)
    max_value = forms.FloatField(required=False)
    labels = forms.CharField(required=False, max_length=5000)
    description = forms.CharField(required=False, max_length=ledger_scores.MAX_DESCRIPTION)
    writers = forms.ChoiceField(choices=ScoreWriters.choices)

    def spec(self) -> ConfigSpec:
        """The config asked for (labels: comma-separated)."""
        data = self.cleaned_data
        labels = tuple(x.strip() for x in str(data["labels"] or "").split(",") if x.strip())
        return ConfigSpec(
            name=data["name"],
            data_type=data["data_type"],
            min_value=data["min_value"],
            max_value=data["max_value"],
            labels=labels,
            description=data["description"] or "",
            writers=data["writers"],
        )


def _page(
    request: HtmxHttpRequest, project: Project, access: Access, *, status: int = 200, **extra: Any
) -> HttpResponse:
    """The scores page: the configs for every member, the forms for the project's admins."""
    context: dict[str, Any] = {
        "project": project,
        "access": access,
        "rows": config_rows(selectors.score_configs(project)),
        "need_config": selectors.scores_need_config(project.pk),
        "data_types": ScoreDataType.choices,
        "writers": ScoreWriters.choices,
        **extra,
    }
    return render(request, PAGE, context, status=status)


def _back(request: HtmxHttpRequest, project: Project, said: str) -> HttpResponse:
    """Back to the scores page, saying what was done."""
    messages.success(request, said)
    return HttpResponseRedirect(reverse("project_scores", args=[project.slug]), status=303)


@login_required
@require_http_methods(["GET", "POST"])
def scores_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The project's score configs (every member); POST adds one (its admins)."""
    project, access = get_project_for_user(request, slug)
    if request.method == "GET":
        return _page(request, project, access)
    require_role(access, Role.ADMIN, "configure scores")
    form = ConfigForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        config = ledger_scores.create_score_config(
            project=project, author=Author(user=request.user), spec=form.spec()
        )
    except DomainError as refused:
        return _page(request, project, access, status=refused.status, error=refused.message,
                     form=form)  # fmt: skip
    return _back(request, project, f"Score “{config.name}” added.")


@login_required
@require_POST
def archive_config(request: HtmxHttpRequest, slug: str, config_id: int) -> HttpResponse:
    """Archive a config (its admins): its scores stay, its name is free again."""
    project, access = get_project_for_user(request, slug)
    require_role(access, Role.ADMIN, "configure scores")
    config = selectors.config_in(project, config_id)
    if config is None:
        return _page(request, project, access, status=404, error="No such score config.")
    ledger_scores.archive_score_config(config=config, author=Author(user=request.user))
    return _back(request, project, f"Score “{config.name}” archived; its scores stay.")


@login_required
@require_POST
def need_config(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Whether every score must name a config (its admins)."""
    project, access = get_project_for_user(request, slug)
    require_role(access, Role.ADMIN, "configure scores")
    required = request.POST.get("required") == "on"
    ledger_scores.set_scores_need_config(project=project, user=request.user, required=required)
    said = "must name" if required else "need not name"
    return _back(request, project, f"Scores {said} one of these configs.")

"""The score panels (issue 28): an editor (and up) scores an answer, or the whole thread from
the conversation header, with the project's configs people may write, replacing their own
earlier score of that config, or takes it back. A plain POST that redirects to the
conversation without JavaScript; htmx swaps the scores part (its chips and the panel) in place.
A refused value is a 4xx naming the field, and nothing is stored."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from transcripts.errors import InvalidInput
from transcripts.ledger import scores as ledger_scores
from transcripts.ledger.scores import ScoreSpec
from transcripts.models import Message, ScoreConfig, ScoreDataType, Thread
from transcripts.permissions import Access, Role
from transcripts.selectors import scores as selectors
from transcripts.web.access import (
    get_message_for_user,
    get_thread_for_user,
    login_required,
    require_role,
)
from transcripts.web.http import HtmxHttpRequest, safe_next
from transcripts.web.presenters.score_panel import (
    ScorePart,
    panel_configs,
    score_panel,
    shown,
    thread_part,
)
from transcripts.web.presenters.scores import score_view

PART = "transcripts/score_panel.html#part"
YES_NO = {"yes": 1.0, "no": 0.0}


class PanelForm(forms.Form):
    """One config's score ("save"), or taking back the reader's score of it ("remove")."""

    config = forms.IntegerField(min_value=1, max_value=2**31 - 1)
    action = forms.ChoiceField(choices=[("save", "save"), ("remove", "remove")], required=False)
    value = forms.CharField(required=False, max_length=ledger_scores.MAX_LABEL)
    comment = forms.CharField(required=False, max_length=ledger_scores.MAX_COMMENT)


def _form_error(form: forms.Form) -> InvalidInput:
    """The first problem of an invalid form, naming its field."""
    name, errors = next(iter(form.errors.items()))
    return InvalidInput(f"{name}: {errors[0]}", field=name)


def _spec(config: ScoreConfig, value: str, comment: str) -> ScoreSpec:
    """The score the form asks for: a number, a label, or yes/no as 1/0."""
    value = value.strip()
    if not value:
        raise InvalidInput(f"value: choose or enter a value for {config.name}", field="value")
    if config.data_type == ScoreDataType.CATEGORICAL:
        return ScoreSpec(name=config.name, label=value, comment=comment)
    if config.data_type == ScoreDataType.BOOLEAN:
        if value not in YES_NO:
            raise InvalidInput(f"value must be yes or no for {config.name}", field="value")
        return ScoreSpec(name=config.name, value=YES_NO[value], comment=comment)
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"value must be a number for {config.name}", field="value") from None
    return ScoreSpec(name=config.name, value=number, comment=comment)


def _config(thread: Thread, config_id: int) -> ScoreConfig:
    """The project's live config people may write with that id, or InvalidInput."""
    config = selectors.config_in(thread.project_id, config_id)
    if config is None or config not in panel_configs([config]):
        raise InvalidInput("config: no such score config for people here", field="config")
    return config


def _message_part(
    request: HtmxHttpRequest, message: Message, access: Access, done: str
) -> HttpResponse:
    """The message's scores part as it is now, saying what was just done."""
    thread = message.thread
    scores = selectors.message_scores(thread, [message.id]).get(message.id, [])
    configs = panel_configs(selectors.score_configs(thread.project))
    panel = score_panel(
        message, slug=thread.project.slug, configs=configs, scores=scores,
        user_id=request.user.pk, access=access, done=done,
    )  # fmt: skip
    item = ScorePart(scores=[score_view(s) for s in scores], score_panel=panel)
    return render(request, PART, {"item": item, "m": message, "thread": thread})


def _thread_part(
    request: HtmxHttpRequest, thread: Thread, access: Access, done: str
) -> HttpResponse:
    """The thread's own scores part (the conversation header's) as it is now."""
    item = thread_part(
        thread, configs=panel_configs(selectors.score_configs(thread.project)),
        scores=selectors.thread_scores(thread), user_id=request.user.pk, access=access, done=done,
    )  # fmt: skip
    return render(request, PART, {"item": item, "m": None, "thread": thread})


def _apply(request: HtmxHttpRequest, thread: Thread, message: Message | None) -> str:
    """Save or remove the reader's score the form names, on message (None: the thread); what
    was done, in words."""
    form = PanelForm(request.POST)
    if not form.is_valid():
        raise _form_error(form)
    data = form.cleaned_data
    config = _config(thread, data["config"])
    user, name = request.user, config.name
    if data["action"] == "remove":
        removed = (
            ledger_scores.remove_person_score(user=user, message=message, name=name)
            if message is not None
            else ledger_scores.remove_person_thread_score(user=user, thread=thread, name=name)
        )
        return f"Your {name} score is removed." if removed else "You had no such score."
    spec = _spec(config, data["value"], data["comment"])
    score = (
        ledger_scores.set_person_score(user=user, message=message, spec=spec)
        if message is not None
        else ledger_scores.set_person_thread_score(user=user, thread=thread, spec=spec)
    )
    return f"Saved: {config.name} {shown(score, config)}."


def _back(request: HtmxHttpRequest, thread: Thread, done: str, anchor: str) -> HttpResponse:
    """Back to the page the form was on (`next`, e.g. Compare), else the conversation at
    anchor (no JavaScript), saying what was done."""
    messages.success(request, done)
    default = reverse("conversation", args=[thread.id]) + anchor
    return HttpResponseRedirect(safe_next(request, default), status=303)


@login_required
@require_POST
def score_message(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Save (replacing) or take back the reader's score of one config on an answer (editors
    and up)."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.EDITOR, "score answers")
    if message.role != "assistant":
        raise InvalidInput("message: scores are given on answers here", field="message")
    done = _apply(request, message.thread, message)
    if request.htmx:
        return _message_part(request, message, access, done)
    return _back(request, message.thread, done, f"?leaf={message.id}#m-{message.id}")


@login_required
@require_POST
def score_thread(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Save (replacing) or take back the reader's score of one config on the whole thread
    (editors and up)."""
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.EDITOR, "score threads")
    done = _apply(request, thread, None)
    if request.htmx:
        return _thread_part(request, thread, access, done)
    return _back(request, thread, done, f"#sc-thread-{thread.id}")

"""New thread: a first message in the current project, answered by a generator that streams."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from transcripts.errors import InvalidInput
from transcripts.generation import start as generation
from transcripts.generation.generators import get_generator, unavailable_reason
from transcripts.ledger.threads import MAX_TITLE
from transcripts.models import Project
from transcripts.permissions import Role, project_access
from transcripts.web.access import current_project, login_required, require_role
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.runs import model_choices, parse_model_choice

TEMPLATE = "transcripts/new_thread.html"
NO_PROJECT = "transcripts/no_project.html"
DEFAULT_GENERATOR = "demo"


def default_choice() -> str:
    """The model select's first pick: the demo generator's default model (offline, no key)."""
    return f"{DEFAULT_GENERATOR}:{get_generator(DEFAULT_GENERATOR).default_model()}"


class NewThreadForm(forms.Form):
    """The title (optional), the first message, and the generator and model that answer it
    (the model select's `choice`, "generator:model", as in the generation options)."""

    title = forms.CharField(required=False, max_length=MAX_TITLE)
    text = forms.CharField(
        max_length=100_000,
        strip=False,
        error_messages={"required": "The first message is empty: write something."},
    )
    choice = forms.CharField(max_length=250, label="Model")

    def clean_text(self) -> str:
        text = str(self.cleaned_data["text"])
        if not text.strip():
            raise forms.ValidationError("The first message is empty: write something.")
        return text

    def clean_choice(self) -> str:
        choice = str(self.cleaned_data["choice"])
        parsed = parse_model_choice(choice)
        reason = unavailable_reason(parsed[0]) if parsed else ""
        if parsed and reason:
            raise forms.ValidationError(f"{parsed[0]} can't run on this server: {reason}.")
        offered = {c.value for _, models in model_choices() for c in models}
        if choice not in offered or parsed is None:
            raise forms.ValidationError("Choose one of the listed models.")
        return choice

    def start_options(self) -> dict[str, Any]:
        """Keyword arguments of generation.start_thread."""
        data = self.cleaned_data
        parsed = parse_model_choice(data["choice"])
        assert parsed is not None  # clean_choice vouched for it
        generator, model = parsed
        return {
            "title": data["title"],
            "text": data["text"],
            "generator": generator,
            "model": model,
        }


def _page(
    request: HtmxHttpRequest, project: Project, form: NewThreadForm, status: int = 200
) -> HttpResponse:
    context = {"form": form, "project": project, "models": model_choices()}
    return render(request, TEMPLATE, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def new_thread(request: HtmxHttpRequest) -> HttpResponse:
    """GET: the form. POST: a thread in the current project (an editor's) with the message
    committed and its answer queued, then the conversation, where the answer streams in."""
    project = current_project(request)
    if project is None:
        return render(request, NO_PROJECT)
    access = project_access(request.user, project)
    require_role(access, Role.EDITOR, f"start a thread in {project.name}")
    if request.method == "GET":
        return _page(request, project, NewThreadForm(initial={"choice": default_choice()}))
    form = NewThreadForm(request.POST)
    if not form.is_valid():
        return _page(request, project, form, status=422)
    try:
        run = generation.start_thread(project=project, **form.start_options())
    except InvalidInput as exc:
        form.add_error(None, exc.message)
        return _page(request, project, form, status=422)
    url = reverse("conversation", args=[run.thread_id])
    return HttpResponseRedirect(f"{url}#run-{run.id}")

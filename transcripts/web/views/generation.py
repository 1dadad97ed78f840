"""Generation actions: regenerate, edit, reply, answer, continue, stop, retry and restore.

Every action is a plain form POST that goes back to the page that asked; htmx requests get
their answer swapped in place. Each needs the editor role in the thread's project (stopping an
agent's API run: its admin); refusals (a role too low, a locked or hidden thread, bad input, a
run in the wrong state) are a page, or an htmx fragment, with their status (`login_required`
renders them). The writes all go through transcripts.generation and transcripts.ledger.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_POST

from transcripts import ledger, selectors
from transcripts.errors import Conflict, InvalidInput, ThreadLocked
from transcripts.generation import start as generation
from transcripts.models import Run, RunStatus, Thread
from transcripts.permissions import Role
from transcripts.selectors.compare import branch_leaf_run
from transcripts.web.access import (
    get_message_for_user,
    get_run_for_user,
    get_thread_for_user,
    login_required,
    message_of,
    require_role,
    require_stop,
)
from transcripts.web.http import HtmxHttpRequest, render_live_block, safe_next, to_conversation
from transcripts.web.presenters.compare import compare_url
from transcripts.web.presenters.runs import (
    PARAMETERS,
    generation_refusal,
    generator_choices,
    parse_model_choice,
)


class OptionsForm(forms.Form):
    """Generator, model and parameters of a new run: the model select's `choice`
    ("generator:model"), or `generator` and `model` (the one-click buttons repeat the last)."""

    choice = forms.CharField(required=False, max_length=250, label="Model")
    generator = forms.ChoiceField(choices=generator_choices, required=False)
    model = forms.CharField(required=False, max_length=200)
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    maxTokens = forms.IntegerField(
        required=False, min_value=1, max_value=100_000, label="Max tokens"
    )
    systemPrompt = forms.CharField(required=False, max_length=20_000, label="System prompt")
    delayMs = forms.IntegerField(
        required=False, min_value=0, max_value=5_000, label="Token delay (ms)"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("choice"):
            parsed = parse_model_choice(data["choice"])
            if parsed is None:
                self.add_error("choice", "choose one of the listed models")
            else:
                data["generator"], data["model"] = parsed
        elif not data.get("generator"):
            self.add_error("generator", "choose a generator")
        return data

    def options(self) -> dict[str, Any]:
        """Keyword arguments for generation.start_generation and its wrappers."""
        data = self.cleaned_data
        parameters = {k: data[k] for k in PARAMETERS if data.get(k) not in (None, "")}
        return {
            "generator": data["generator"],
            "model": data["model"].strip(),
            "parameters": parameters,
        }


class TextForm(forms.Form):
    """The text of an edited or new user message."""

    text = forms.CharField(
        max_length=100_000, error_messages={"required": "The message is empty: write something."}
    )


def _form_errors(*bound: forms.Form) -> str:
    problems = []
    for form in bound:
        for name, errors in form.errors.items():
            label = form.fields[name].label or name if name in form.fields else name
            problems += [f"{str(label).capitalize()}: {e}" for e in errors]
    return " ".join(problems)


def _valid(*bound: forms.Form) -> None:
    if not all(form.is_valid() for form in bound):
        raise InvalidInput(_form_errors(*bound))


def _require_open(thread: Thread) -> None:
    """Refuse (409) on a locked or hidden thread, saying why."""
    reason = generation_refusal(thread)
    if reason:
        raise (ThreadLocked if thread.locked else Conflict)(reason, threadId=thread.id)


def _started(request: HtmxHttpRequest, run: Run) -> HttpResponse:
    """Show the conversation at the new run's fork point, where its live block appears."""
    response = to_conversation(request, run.thread_id, run.fork_from_id)
    if not request.htmx:
        response["Location"] += f"#run-{run.id}"
    return response


# --- actions -----------------------------------------------------------------------------


@login_required
@require_POST
def regenerate(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Regenerate an assistant message: a new run forked from its parent."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.EDITOR, "regenerate an answer")
    _require_open(message.thread)
    form = OptionsForm(request.POST)
    _valid(form)
    run = generation.start_regenerate(message=message, **form.options())
    return _started(request, run)


@login_required
@require_POST
def edit(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Edit a user message: a run forked from its parent, the edited message first."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.EDITOR, "edit a message")
    _require_open(message.thread)
    form, text = OptionsForm(request.POST), TextForm(request.POST)
    _valid(text, form)
    run = generation.start_edit(message=message, text=text.cleaned_data["text"], **form.options())
    return _started(request, run)


@login_required
@require_POST
def reply(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Reply at the head: the user's message is committed, then answered."""
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.EDITOR, "reply")
    _require_open(thread)
    form, text = OptionsForm(request.POST), TextForm(request.POST)
    _valid(text, form)
    run = generation.start_reply(thread=thread, text=text.cleaned_data["text"], **form.options())
    return _started(request, run)


@login_required
@require_POST
def answer(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Generate an answer to a user message left without one: a run forked from it."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.EDITOR, "generate an answer")
    _require_open(message.thread)
    form = OptionsForm(request.POST)
    _valid(form)
    return _started(request, generation.start_answer(message=message, **form.options()))


@login_required
@require_POST
def continue_answer(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Continue a stopped answer: a new branch beside it that carries its text on."""
    message, access = get_message_for_user(request, thread_id, message_id)
    require_role(access, Role.EDITOR, "continue an answer")
    _require_open(message.thread)
    form = OptionsForm(request.POST)
    _valid(form)
    return _started(request, generation.start_continue(message=message, **form.options()))


@login_required
@require_POST
def cancel(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Stop an open run, keeping what it streamed (ledger.stop_run), and show where it stopped.

    A browser run's partial answer becomes the active branch and the answer is the
    conversation at it (the page focuses it); an agent's run, or one that streamed nothing,
    is cancelled and its live block says so. Allowed on a locked or hidden thread too: a
    moderator who locks a thread mid-run wants the generation to end (nothing is added then).
    """
    run, access = get_run_for_user(request, run_id)
    require_stop(run, access)
    thread = run.thread
    run = ledger.stop_run(run=run)
    if run.status == RunStatus.CANCELLED:
        if request.htmx:
            return render_live_block(request, run, thread, access)
        return to_conversation(request, thread.id)
    last = selectors.last_message_id(run)
    response = to_conversation(request, thread.id, last)
    if not request.htmx and last:
        response["Location"] += f"#m-{last}"
    return response


@login_required
@require_POST
def retry(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Run a failed or stopped run's generation again from the same fork point."""
    run, access = get_run_for_user(request, run_id)
    require_role(access, Role.EDITOR, "retry a run")
    _require_open(run.thread)
    return _started(request, generation.retry(run=run))


@login_required
@require_POST
def restore(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Make a run's branch the thread's active one again, then go back to `next`.

    The one restore of the pages: the compare columns and the conversation's switcher post
    here. The switcher also posts `leaf`, the message its branch is shown through: the branch
    from there down is the one restored (through run), not the latest one below run's end.
    Without `next` the answer is the compare page of the run's fork point; htmx follows the
    redirect and each form picks its own section from the page.
    """
    run, access = get_run_for_user(request, run_id)
    require_role(access, Role.EDITOR, "restore a branch")
    _require_open(run.thread)
    leaf = request.POST.get("leaf", "")
    if leaf:
        run = branch_leaf_run(run, message_of(run.thread, leaf))
    ledger.restore_run(run=run)
    messages.success(request, "Restored: this branch is the active one again.")
    return HttpResponseRedirect(safe_next(request, compare_url(run)), status=303)

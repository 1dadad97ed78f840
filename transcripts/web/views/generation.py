"""HTML actions of generation: regenerate, edit, reply, stop, retry, restore, and the live run.

Every action is a plain form POST that redirects back to the conversation; htmx requests get an
HX-Location instead, which swaps the conversation in place. The writes all go through
transcripts.generation and transcripts.ledger.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Concatenate, ParamSpec

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseLocation

from transcripts import ledger, selectors
from transcripts.errors import Conflict, DomainError, InvalidInput, ThreadLocked
from transcripts.generation import start as generation
from transcripts.generation.generators import CHOICES, EXTERNAL, GENERATORS
from transcripts.generation.worker import reap_expired_runs
from transcripts.ids import is_ulid
from transcripts.models import OPEN_STATUSES, Message, Run, RunStatus, Thread
from transcripts.web.views import browse
from transcripts.web.views.browse import HtmxHttpRequest, MessageItem

P = ParamSpec("P")

TEMPLATE = "transcripts/generation.html"
PARAMETERS = ("temperature", "maxTokens", "systemPrompt", "delayMs")
# Run events after which the live block re-renders the run's projection (the final status
# has a trigger of its own, see generation.html).
LIVE_TRIGGERS = ", ".join(
    [
        "sse:text-delta throttle:100ms",
        "sse:reasoning throttle:100ms",
        "sse:message-start",
        "sse:message",
        "sse:tool-call",
        "sse:tool-result",
        "sse:file",
        "sse:error",
        "sse:step-finished",
        # No event for a while: look again, so a run whose worker died shows as failed even
        # when no other worker is alive to notice (run_live expires lapsed leases).
        "every 10s",
    ]
)


def generator_choices() -> list[tuple[str, str]]:
    """(name, label) of every generator a run can use."""
    return [
        (name, GENERATORS[name].label if name in GENERATORS else "External stream layer")
        for name in CHOICES
    ]


class OptionsForm(forms.Form):
    """Generator, model and parameters of a new run (all but the generator optional)."""

    generator = forms.ChoiceField(choices=generator_choices)
    model = forms.CharField(required=False, max_length=200)
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    maxTokens = forms.IntegerField(
        required=False, min_value=1, max_value=100_000, label="Max tokens"
    )
    systemPrompt = forms.CharField(required=False, max_length=20_000, label="System prompt")
    delayMs = forms.IntegerField(
        required=False, min_value=0, max_value=5_000, label="Token delay (ms)"
    )

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


# --- state the conversation page shows --------------------------------------------------


def refusal_for(thread: Thread) -> str:
    """Why the thread takes no generation actions ('' when it does)."""
    if thread.locked:
        return "This thread is locked: it can't be regenerated, edited, continued or restored."
    if thread.hidden:
        return (
            "This thread is hidden by moderation: it can't be regenerated, edited, continued "
            "or restored."
        )
    return ""


def _check_open(thread: Thread) -> None:
    reason = refusal_for(thread)
    if reason:
        raise (ThreadLocked if thread.locked else Conflict)(reason, threadId=thread.id)


@dataclass
class Options:
    """What the option forms of a thread show: choices and the thread's last choice."""

    refusal: str
    choices: list[tuple[str, str]]
    defaults: dict[str, Any]

    @property
    def summary(self) -> str:
        """A short line for the collapsed options, e.g. 'demo · demo-1 · t=0.7'."""
        bits = [self.defaults["generator"], self.defaults["model"]]
        if self.defaults.get("temperature") is not None:
            bits.append(f"t={self.defaults['temperature']}")
        return " · ".join(b for b in bits if b)


def options_for(thread: Thread) -> Options:
    """The thread's option defaults, computed once per thread object (one query)."""
    cached = getattr(thread, "_generation_options", None)
    if isinstance(cached, Options):
        return cached
    refusal = refusal_for(thread)
    choice = selectors.last_choice(thread) if not refusal else {}
    parameters = choice.get("parameters") or {}
    defaults = {
        "generator": choice.get("generator") or "demo",
        "model": choice.get("model") or "",
        **{key: parameters.get(key) for key in PARAMETERS},
    }
    options = Options(refusal=refusal, choices=generator_choices(), defaults=defaults)
    thread._generation_options = options  # type: ignore[attr-defined]
    return options


@dataclass
class LiveRun:
    """An open (or just closed) run as the live block shows it."""

    run: Run
    items: list[MessageItem]
    errors: list[str]
    conversation_url: str
    stream_url: str
    live_url: str
    triggers: str = LIVE_TRIGGERS
    # In a conversation window: "top", "after" (the fork point) or "bottom"; "" on its own.
    placement: str = ""
    after_id: str | None = None
    generator_label: str = ""
    # The newer attempt of this failed run (a Retry, or TRANSCRIPTS_REQUEUE_EXPIRED).
    requeued_as: Run | None = None
    retryable: bool = field(init=False)
    waiting: str = field(init=False)

    def __post_init__(self) -> None:
        closed = self.run.status in (RunStatus.FAILED, RunStatus.CANCELLED)
        self.retryable = closed and self.requeued_as is None
        if self.run.status == RunStatus.QUEUED:
            self.waiting = (
                "Waiting for the external stream layer to claim this run…"
                if self.run.generator == EXTERNAL
                else "Waiting for a worker…"
            )
        else:
            self.waiting = "Generating…"
        if self.run.is_open and self.run.metadata.get("retryOf"):
            self.waiting += " (a new attempt of a run that failed)"


def _unsaved_messages(run: Run, thread: Thread) -> tuple[list[Message], list[str]]:
    projection = selectors.project_run(run)
    messages = [
        Message(
            id=m["id"],
            thread=thread,
            run=run,
            parent_id=m["parentMessageId"],
            depth=position,
            position=position,
            role=m["role"],
            parts=m["parts"],
            metadata=m["metadata"],
            created_at=datetime.fromisoformat(m["createdAt"]),
            active=True,
        )
        for position, m in enumerate(projection.messages)
    ]
    errors = [str(e.get("message") or e) for e in projection.errors if isinstance(e, dict)]
    return messages, errors


def live_run(run: Run, thread: Thread) -> LiveRun:
    """The run's projection so far, rendered like committed messages."""
    messages, errors = _unsaved_messages(run, thread)
    label = dict(generator_choices()).get(run.generator, run.generator or "external")
    requeued_as = None
    if run.status == RunStatus.FAILED:
        requeued_as = Run.objects.filter(thread=thread, metadata__retryOf=run.id).first()
    return LiveRun(
        run=run,
        items=browse._message_items(thread, messages),
        errors=errors,
        conversation_url=reverse("conversation", args=[thread.id]),
        stream_url=f"/api/v1/runs/{run.id}/stream",
        live_url=reverse("run_live", args=[run.id]),
        generator_label=label,
        requeued_as=requeued_as,
    )


def open_live_run(thread: Thread, items: list[MessageItem]) -> LiveRun | None:
    """The thread's open run placed in the window: after its fork point, or at the top/bottom."""
    run_id = getattr(thread, "open_run_id", None)
    if not run_id:
        return None
    run = Run.objects.filter(pk=run_id, status__in=OPEN_STATUSES).first()
    if run is None:  # closed since the thread was read
        return None
    live = live_run(run, thread)
    if run.fork_from_id is None:
        live.placement = "top"
    elif any(item.message.id == run.fork_from_id for item in items):
        live.placement, live.after_id = "after", run.fork_from_id
    else:
        live.placement = "bottom"
    return live


# --- responses ---------------------------------------------------------------------------


def _refusal(request: HtmxHttpRequest, message: str, status: int) -> HttpResponse:
    back = request.headers.get("Referer", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    context = {"refusal": message, "status": status, "back_url": back}
    if request.htmx:
        response = render(request, f"{TEMPLATE}#refusal", context, status=status)
        response["X-Refusal"] = "1"  # app.js swaps these into the form despite the status
        return response
    return render(request, TEMPLATE, context, status=status)


def _refusals(
    view: Callable[Concatenate[HtmxHttpRequest, P], HttpResponse],
) -> Callable[Concatenate[HtmxHttpRequest, P], HttpResponse]:
    """Turn ledger refusals into a page (or an htmx fragment) with their status."""

    @functools.wraps(view)
    def wrapper(request: HtmxHttpRequest, /, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except DomainError as exc:
            return _refusal(request, exc.message, exc.status)

    return wrapper


def _to_conversation(
    request: HtmxHttpRequest, thread_id: str, leaf: str | None = None
) -> HttpResponse:
    url = reverse("conversation", args=[thread_id])
    if leaf:
        url += f"?leaf={leaf}"
    if request.htmx:
        return HttpResponseLocation(url, target="#conversation", swap="outerHTML")
    return HttpResponseRedirect(url)


def _started(request: HtmxHttpRequest, run: Run) -> HttpResponse:
    """Show the conversation at the new run's fork point, where its live block appears."""
    response = _to_conversation(request, run.thread_id, run.fork_from_id)
    if not request.htmx:
        response["Location"] += f"#run-{run.id}"
    return response


def _message_or_404(thread: Thread, message_id: str) -> Message:
    if not is_ulid(message_id):
        raise Http404("no such message")
    message = get_object_or_404(Message, pk=message_id, thread=thread)
    message.thread = thread
    return message


def _run_or_404(request: HtmxHttpRequest, run_id: str) -> tuple[Run, Thread]:
    if not is_ulid(run_id):
        raise Http404("no such run")
    run = get_object_or_404(Run, pk=run_id)
    thread = browse._thread_or_404(request, run.thread_id)
    return run, thread


# --- actions -----------------------------------------------------------------------------


@login_required
@require_POST
@_refusals
def regenerate(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Regenerate an assistant message: a new run forked from its parent."""
    thread = browse._thread_or_404(request, thread_id)
    message = _message_or_404(thread, message_id)
    _check_open(thread)
    form = OptionsForm(request.POST)
    _valid(form)
    run = generation.start_regenerate(message=message, **form.options())
    return _started(request, run)


@login_required
@require_POST
@_refusals
def edit(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Edit a user message: a run forked from its parent, the edited message first."""
    thread = browse._thread_or_404(request, thread_id)
    message = _message_or_404(thread, message_id)
    _check_open(thread)
    form, text = OptionsForm(request.POST), TextForm(request.POST)
    _valid(text, form)
    run = generation.start_edit(message=message, text=text.cleaned_data["text"], **form.options())
    return _started(request, run)


@login_required
@require_POST
@_refusals
def reply(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Reply at the head: the user's message is committed, then answered."""
    thread = browse._thread_or_404(request, thread_id)
    _check_open(thread)
    form, text = OptionsForm(request.POST), TextForm(request.POST)
    _valid(text, form)
    run = generation.start_reply(thread=thread, text=text.cleaned_data["text"], **form.options())
    return _started(request, run)


@login_required
@require_POST
@_refusals
def cancel(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Stop an open run; what it streamed stays visible.

    Allowed on a locked or hidden thread too: stopping adds nothing, and a moderator who
    locks a thread mid-run wants the generation to end.
    """
    run, thread = _run_or_404(request, run_id)
    run = ledger.cancel_run(run=run)
    if request.htmx:
        return _render_live(request, run, thread)
    return _to_conversation(request, thread.id)


@login_required
@require_POST
@_refusals
def retry(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Run a failed or stopped run's generation again from the same fork point."""
    run, thread = _run_or_404(request, run_id)
    _check_open(thread)
    return _started(request, generation.retry(run=run))


@login_required
@require_POST
@_refusals
def restore(request: HtmxHttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    """Make a superseded run's branch the thread's active one again."""
    run, thread = _run_or_404(request, run_id)
    if thread.id != thread_id:
        raise Http404("no such run in this thread")
    _check_open(thread)
    ledger.restore_run(run=run)
    return _to_conversation(request, thread.id)


def _render_live(request: HtmxHttpRequest, run: Run, thread: Thread) -> HttpResponse:
    live = live_run(run, thread)
    context = {"live": live, "thread": thread, "url": live.conversation_url}
    return render(request, f"{TEMPLATE}#live-body", context)


@login_required
@require_GET
def run_live(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """The live block's body; once the run is committed, the conversation instead."""
    run, thread = _run_or_404(request, run_id)
    if run.is_open and run.lease_expires_at is not None and run.lease_expires_at < timezone.now():
        # Its worker died: do what any worker's reaper would (fail it, or queue it again).
        reap_expired_runs()
        run.refresh_from_db()
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        return _to_conversation(request, thread.id)
    return _render_live(request, run, thread)

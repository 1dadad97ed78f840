"""Runs as the pages show them: the run page's heading, fork point, content and raw event
log (its trace is in presenters/trace.py), times that are never negative, the live block of an
open run, and the generation options a thread offers."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from transcripts.generation.generators import (
    CHOICES,
    EXTERNAL,
    EXTERNAL_LABEL,
    GENERATORS,
    availability,
    unavailable_reason,
)
from transcripts.generation.leases import lease_seconds
from transcripts.models import Event, Run, RunStatus, Thread
from transcripts.permissions import Access, may_stop
from transcripts.projector import Projection
from transcripts.selectors.run_page import ForkPoint, RunPlace
from transcripts.selectors.runs import LiveRunFacts
from transcripts.web import rendering
from transcripts.web.presenters.messages import MessageItem, message_items, projected_messages

# --- times ------------------------------------------------------------------------------

NO_TIMING = "no timing recorded"
CONTINUED = "continued: the stopped answer's text came first"
CLOCK_SKEW = "≈0, clock skew"


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """Seconds from start to end, or None when either is unknown."""
    if start is None or end is None:
        return None
    return (end - start).total_seconds()


def elapsed(start: datetime | None, end: datetime | None) -> tuple[float | None, bool]:
    """Seconds from start to end never below 0 (None when a time is unknown), and whether
    they were below 0 and so shown as 0."""
    seconds = seconds_between(start, end)
    if seconds is None or seconds >= 0:
        return seconds, False
    return 0.0, True


def continues(run: Run) -> bool:
    """Whether the run carries on a stopped answer (its events start with that text)."""
    return isinstance(run.metadata, dict) and bool(run.metadata.get("continues"))


def clamp_note(run: Run) -> str:
    """Why a time of the run that came out below 0 is shown as 0."""
    return CONTINUED if continues(run) else CLOCK_SKEW


# --- the run page ------------------------------------------------------------------------

# Links and images (kept: their text), emphasis, code, heading and quote marks; an underscore
# inside a word (get_forecast) stays.
_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|[*`#>~]+|(?<!\w)_+|_+(?!\w)")


def plain_excerpt(text: str) -> str:
    """A one-line excerpt without Markdown's marks: links become their text."""
    return " ".join(_MARKUP.sub(lambda m: m.group(1) or "", text).split())


def run_heading(run: Run, place: RunPlace) -> str:
    """The run's heading: "Run 3 of 5 · demo-1" (its model, else its generator)."""
    name = run.model or run.generator or "external"
    return f"Run {place.ordinal} of {place.total} · {name}"


def fork_label(fork: ForkPoint | None) -> str:
    """Where the run starts: "after message 4 · user: Should I bike…", or the thread's start."""
    if fork is None:
        return "starts the thread"
    excerpt = plain_excerpt(fork.excerpt)
    return f"after message {fork.number} · {fork.role}{': ' + excerpt if excerpt else ''}"


def content_items(thread: Thread, run: Run, projection: Projection) -> list[MessageItem]:
    """The run's messages as they stand (selectors.run_projection), as conversation cards."""
    return message_items(thread, projected_messages(thread, run, projection.messages))


# --- the raw event log --------------------------------------------------------------------


@dataclass
class EventRow:
    """One line of a run's event log."""

    event: Event
    offset: float | None
    preview: str
    payload: SafeString


def event_rows(run: Run, events: list[Event], *, timed: bool = True) -> list[EventRow]:
    """The log lines of events, timed from the start of the run (never before it); no time
    when the run's events carry none (timed False: they share one instant)."""
    origin = run.started_at or run.created_at
    return [
        EventRow(
            event=e,
            offset=elapsed(origin, e.at)[0] if timed else None,
            preview=rendering.json_preview(e.data, 140),
            payload=rendering.pretty_json(e.data),
        )
        for e in events
    ]


# --- generation options ------------------------------------------------------------------

PARAMETERS = ("temperature", "maxTokens", "systemPrompt", "delayMs")


def generator_choices() -> list[tuple[str, str]]:
    """(name, label) of every generator a run can use."""
    return [
        (name, GENERATORS[name].label if name in GENERATORS else EXTERNAL_LABEL) for name in CHOICES
    ]


@dataclass(frozen=True)
class ModelChoice:
    """One entry of the model select: a generator and one of its models."""

    generator: str
    model: str
    label: str

    @property
    def value(self) -> str:
        """The select's value, "generator:model"."""
        return f"{self.generator}:{self.model}"


def model_choices() -> list[tuple[str, list[ModelChoice]]]:
    """The models of every generator that can run on this server now, grouped by the
    generator's label (the others are on the project page, with the reason)."""
    return [
        (g.label, [ModelChoice(g.name, m, m or g.name) for m in g.models])
        for g in availability()
        if g.available
    ]


def parse_model_choice(value: str) -> tuple[str, str] | None:
    """(generator, model) of a model select value, or None when it names no generator."""
    generator, _, model = value.partition(":")
    if generator not in CHOICES:
        return None
    return generator, model.strip()


def generation_refusal(thread: Thread) -> str:
    """Why the thread takes no generation actions ('' when it does)."""
    if thread.locked:
        return "This thread is locked: it can't be regenerated, edited, continued or restored."
    if thread.hidden:
        return (
            "This thread is hidden by moderation: it can't be regenerated, edited, continued "
            "or restored."
        )
    return ""


@dataclass
class Options:
    """What the option forms of a thread show: choices and the thread's last choice."""

    refusal: str
    choices: list[tuple[str, str]]
    defaults: dict[str, Any]
    models: list[tuple[str, list[ModelChoice]]] = field(default_factory=list)

    @property
    def choice(self) -> str:
        """The model select's value of the last choice, "generator:model"."""
        return f"{self.defaults['generator']}:{self.defaults['model']}"

    @property
    def summary(self) -> str:
        """A short line for the collapsed options, e.g. 'demo · demo-1 · t=0.7'."""
        bits = [self.defaults["generator"], self.defaults["model"]]
        if self.defaults.get("temperature") is not None:
            bits.append(f"t={self.defaults['temperature']}")
        return " · ".join(b for b in bits if b)


def role_refusal(access: Access) -> str:
    """Why the reader's role takes no generation actions ('' when it does)."""
    if access.can_edit:
        return ""
    have = access.role.label if access.role is not None else "no role"
    return (
        f"Your role in this project is {have}: you may read and report. Regenerating, "
        "editing, replying, restoring and rating need the editor role."
    )


def options_for(
    thread: Thread, access: Access, last_choice: Callable[[Thread], dict[str, Any]]
) -> Options:
    """The thread's option defaults (its last choice, read by last_choice only when options
    are offered: selectors.last_choice, one query), or why the thread (or the reader's role)
    refuses."""
    refusal = role_refusal(access) or generation_refusal(thread)
    choice = last_choice(thread) if not refusal else {}
    parameters = choice.get("parameters") or {}
    generator = choice.get("generator") or "demo"
    model = choice.get("model") or ""
    models = model_choices()
    if generator not in {c.generator for _, group in models for c in group}:
        # The last choice cannot run now (its key was removed): the one-click actions would
        # only fail, so they use the demo generator instead.
        generator, model, parameters = "demo", "", {}
    if generator in GENERATORS and not model:
        model = GENERATORS[generator]().default_model()
    defaults = {
        "generator": generator,
        "model": model,
        **{key: parameters.get(key) for key in PARAMETERS},
    }
    offered = {c.value for _, group in models for c in group}
    if f"{generator}:{model}" not in offered:
        # A model no longer listed (or typed before models were a list): offer it too, so
        # the one-click Regenerate repeats exactly what was used last.
        models.insert(0, ("Last used", [ModelChoice(generator, model, model or generator)]))
    return Options(refusal=refusal, choices=generator_choices(), defaults=defaults, models=models)


# --- the live block ----------------------------------------------------------------------

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
        # No event for a while: look again, so a run whose worker died says so, and shows as
        # failed once a worker's sweeper has failed it (reading it never changes it).
        "every 10s",
    ]
)


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
    # For a run waiting for a worker: seconds since any worker was seen, when that is longer
    # than a lease (math.inf: none ever was); None while workers are about.
    worker_silence: float | None = None
    # What the reader may do with it: stop it (permissions.may_stop), retry it (an editor).
    may_stop: bool = False
    may_retry: bool = False
    # Why Retry is not offered although the run could be retried: its generator can't run
    # on this server now ('' when it can).
    retry_refusal: str = ""
    retryable: bool = field(init=False)
    waiting: str = field(init=False)
    # An open run whose worker's lease lapsed: its worker stopped responding.
    stalled: bool = field(init=False)

    def __post_init__(self) -> None:
        closed = self.run.status in (RunStatus.FAILED, RunStatus.CANCELLED)
        if closed and self.requeued_as is None:
            self.retry_refusal = retry_refusal(self.run.generator)
        self.retryable = closed and self.requeued_as is None and not self.retry_refusal
        lease = self.run.lease_expires_at
        self.stalled = self.run.is_open and lease is not None and lease < timezone.now()
        if self.run.status == RunStatus.QUEUED:
            if self.run.generator == EXTERNAL:
                self.waiting = "Waiting for the external stream layer to claim this run…"
            elif self.worker_silence is not None:
                self.waiting = _no_worker(self.worker_silence)
            else:
                self.waiting = "Waiting for a worker…"
        else:
            self.waiting = "Generating…"
        if self.run.is_open and self.run.metadata.get("retryOf"):
            self.waiting += " (a new attempt of a run that failed)"


def retry_refusal(generator: str) -> str:
    """Why a closed run of generator can't be retried on this server ('' when it can)."""
    if generator not in CHOICES:
        return "it came from outside (an agent or an import), not from a generator of this server"
    return unavailable_reason(generator)


def _no_worker(silence: float) -> str:
    start = "start one with “python manage.py worker”."
    if math.isinf(silence):
        return f"No worker is running: {start}"
    if silence < 60:
        return f"No worker has been seen for {silence:.0f} s: {start}"
    ago = timesince(timezone.now() - timedelta(seconds=silence))
    return f"No worker has been seen for {ago}: {start}"


def worker_silence(run: Run, silence: float | None) -> float | None:
    """For a run waiting for one of the built-in generators: the seconds since any worker was
    seen (silence, math.inf: never) when that is longer than a lease, else None."""
    if run.status != RunStatus.QUEUED or run.generator == EXTERNAL or silence is None:
        return None
    return silence if silence > lease_seconds() else None


def live_run(run: Run, thread: Thread, facts: LiveRunFacts, *, access: Access) -> LiveRun:
    """The run's projection so far (facts: selectors.live_run_facts), rendered like committed
    messages, with the actions the reader's access allows."""
    projection = facts.projection
    messages = projected_messages(thread, run, projection.messages)
    errors = [str(e.get("message") or e) for e in projection.errors if isinstance(e, dict)]
    label = dict(generator_choices()).get(run.generator, run.generator or "external")
    return LiveRun(
        run=run,
        items=message_items(thread, messages),
        errors=errors,
        conversation_url=reverse("conversation", args=[thread.id]),
        stream_url=f"/api/v1/runs/{run.id}/stream",
        live_url=reverse("run_live", args=[run.id]),
        generator_label=label,
        requeued_as=facts.requeued_as,
        worker_silence=worker_silence(run, facts.worker_silence),
        may_stop=may_stop(run, user_access=access),
        may_retry=access.can_edit,
    )


def failed_live_run(run: Run, facts: LiveRunFacts, thread: Thread, *, access: Access) -> LiveRun:
    """A failed run the conversation still shows after its fork point (selectors.
    unanswered_failures): its partial output, error and Retry, placed "failed"."""
    live = live_run(run, thread, facts, access=access)
    live.placement, live.after_id = "failed", run.fork_from_id
    return live


def open_live_run(
    run: Run, facts: LiveRunFacts, thread: Thread, items: list[MessageItem], *, access: Access
) -> LiveRun:
    """The thread's open run (selectors.open_run_of, with selectors.live_run_facts) placed in
    the window: after its fork point, or at the top/bottom."""
    live = live_run(run, thread, facts, access=access)
    if run.fork_from_id is None:
        live.placement = "top"
    elif any(item.message.id == run.fork_from_id for item in items):
        live.placement, live.after_id = "after", run.fork_from_id
    else:
        live.placement = "bottom"
    return live

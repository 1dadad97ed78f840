"""Reads of the OpenTelemetry evaluations (issue 28): what a `gen_ai.evaluation.result` event
judges, found through what the ingest stored (a run's `metadata.otel {traceId, spanIds,
responseIds}`, an answer's `metadata.otel {spanId, responseId}`), in one project and only in
the threads the caller reaches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from transcripts.models import Message, Run, Thread


@dataclass(frozen=True)
class Judged:
    """What an evaluation judges: a message, else a run (never both), and their thread."""

    thread: Thread
    run: Run | None = None
    message: Message | None = None


def _reached(
    project_id: int, conversations: Sequence[str], *, visible: bool, hidden: bool
) -> QuerySet[Thread]:
    """The project's threads the caller reaches (visible ones, hidden ones, or both), only
    those of conversations (their external ids) when some are given."""
    allowed = [flag for flag, ok in ((False, visible), (True, hidden)) if ok]
    threads = Thread.objects.filter(project_id=project_id, hidden__in=allowed)
    return threads.filter(external_id__in=list(conversations)) if conversations else threads


def _last_answer(messages: QuerySet[Message]) -> Message | None:
    """The last assistant message of messages, else their last message."""
    ordered = messages.select_related("thread").order_by("run_id", "position")
    return ordered.filter(role="assistant").last() or ordered.last()


def judged_by_spans(
    project_id: int,
    trace_id: str,
    span_ids: Sequence[str],
    *,
    conversations: Sequence[str] = (),
    visible: bool,
    hidden: bool,
) -> Judged | None:
    """What the spans (of one trace) produced: their last answer, else the last run holding
    one of them, or None. Given conversations (the threads' external ids it may be in), an
    indexed look there; else a look through the project's runs."""
    runs = Run.objects.filter(
        thread__in=_reached(project_id, conversations, visible=visible, hidden=hidden),
        metadata__otel__traceId=trace_id,
    )
    message = _last_answer(
        Message.objects.filter(run__in=runs, metadata__otel__spanId__in=list(span_ids))
    )
    if message is not None:
        return Judged(thread=message.thread, message=message)
    run = (
        runs.filter(metadata__otel__spanIds__has_any_keys=list(span_ids))
        .select_related("thread")
        .order_by("id")
        .last()
    )
    return Judged(thread=run.thread, run=run) if run is not None else None


def judged_by_response(
    project_id: int,
    response_id: str,
    *,
    conversations: Sequence[str] = (),
    visible: bool,
    hidden: bool,
) -> Judged | None:
    """The answer whose provider response id is response_id (in conversations, when given),
    or None."""
    runs = Run.objects.filter(
        thread__in=_reached(project_id, conversations, visible=visible, hidden=hidden),
        metadata__otel__responseIds__contains=[response_id],
    )
    message = _last_answer(
        Message.objects.filter(run__in=runs, metadata__otel__responseId=response_id)
    )
    return Judged(thread=message.thread, message=message) if message is not None else None

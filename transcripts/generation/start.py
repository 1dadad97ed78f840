"""Starting generation: queue a run for a generator (regenerate, edit, reply, retry)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import transaction

from transcripts import ledger
from transcripts.errors import InvalidInput
from transcripts.generation.generators import (
    EXTERNAL,
    GENERATORS,
    get_generator,
)
from transcripts.models import Message, Run, RunOrigin, RunStatus, Thread


def _clean_parameters(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    params = dict(parameters or {})
    for key in ("temperature", "maxTokens", "delayMs"):
        if params.get(key) in ("", None):
            params.pop(key, None)
    try:
        if "temperature" in params:
            params["temperature"] = float(params["temperature"])
            if not 0 <= params["temperature"] <= 2:
                raise ValueError
        if "maxTokens" in params:
            params["maxTokens"] = int(params["maxTokens"])
            if not 1 <= params["maxTokens"] <= 100_000:
                raise ValueError
        if "delayMs" in params:
            params["delayMs"] = max(0.0, float(params["delayMs"]))
    except (TypeError, ValueError):
        raise InvalidInput(
            "temperature must be between 0 and 2 and maxTokens between 1 and 100000",
            parameters=params,
        ) from None
    if params.get("systemPrompt") in ("", None):
        params.pop("systemPrompt", None)
    return params


def start_generation(
    *,
    thread: Thread,
    fork_from: Any = ledger.HEAD,
    generator: str = "demo",
    model: str = "",
    parameters: Mapping[str, Any] | None = None,
    prefix: list[dict[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Run:
    """Queue a run for generator, forked from fork_from; prefix events (an edit) come first."""
    if generator != EXTERNAL and generator not in GENERATORS:
        raise InvalidInput(f"unknown generator {generator!r}", field="generator")
    params = _clean_parameters(parameters)
    if not model and generator != EXTERNAL:
        model = get_generator(generator).default_model()
    with transaction.atomic():
        run, _ = ledger.begin_run(
            thread=thread,
            fork_from=fork_from,
            status=RunStatus.QUEUED,
            generator=generator,
            model=model,
            parameters=params,
            metadata=metadata,
            origin=RunOrigin.WEB,
        )
        if prefix:
            # Still queued: a worker (or the outside stream layer) has to pick it up.
            ledger.append_events(run=run, events=prefix, start=False)
        from transcripts.generation import tasks

        if generator == EXTERNAL:
            if getattr(settings, "TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", ""):
                transaction.on_commit(lambda: tasks.notify_external_webhook.enqueue(run.id))
        else:
            transaction.on_commit(lambda: tasks.generate_run.enqueue(run.id))
    return run


def _user_message_event(text: str) -> dict[str, Any]:
    text = text.strip()
    if not text:
        raise InvalidInput("the message is empty", field="text")
    return {
        "seq": 1,
        "kind": "message",
        "data": {"role": "user", "parts": [{"type": "text", "text": text}]},
    }


def start_regenerate(*, message: Message, **options: Any) -> Run:
    """Regenerate an assistant message: a new run forked from its parent."""
    if message.role != "assistant":
        raise InvalidInput("only an assistant message can be regenerated", role=message.role)
    return start_generation(thread=message.thread, fork_from=message.parent_id, **options)


def start_edit(*, message: Message, text: str, **options: Any) -> Run:
    """Edit a user message: a run forked from its parent, the edited message first."""
    if message.role != "user":
        raise InvalidInput("only a user message can be edited", role=message.role)
    prefix = [_user_message_event(text)]
    return start_generation(
        thread=message.thread, fork_from=message.parent_id, prefix=prefix, **options
    )


def start_reply(*, thread: Thread, text: str, fork_from: Any = ledger.HEAD, **options: Any) -> Run:
    """Reply at the head (or below fork_from): the user's message is committed, then answered."""
    event = _user_message_event(text)
    with transaction.atomic():
        turn, _ = ledger.begin_run(
            thread=thread, fork_from=fork_from, generator="user", origin=RunOrigin.WEB
        )
        ledger.append_events(run=turn, events=[event])
        ledger.commit_run(run=turn)
        question = turn.messages.get()
        return start_generation(thread=thread, fork_from=question.id, **options)


def retry(*, run: Run) -> Run:
    """Run a failed or cancelled run's generation again, from the same fork point."""
    if run.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
        raise InvalidInput("only a failed or cancelled run can be retried", status=run.status)
    return queue_again(run)


def queue_again(run: Run) -> Run:
    """A fresh attempt of run's generation: same fork point, options and edited message."""
    prefix = [
        {"seq": e.seq, "kind": e.kind, "data": e.data}
        for e in run.events.filter(seq=1, kind="message")
    ]
    return start_generation(
        thread=run.thread,
        fork_from=run.fork_from_id,
        generator=run.generator,
        model=run.model,
        parameters=run.parameters,
        prefix=prefix,
        metadata={"retryOf": run.id},
    )

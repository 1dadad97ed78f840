"""Starting generation: queue a run for a generator (regenerate, edit, reply, answer, continue,
retry, a new thread). Every way ends in `tasks.start_generation`, which queues the run and its
task."""

from __future__ import annotations

from typing import Unpack

from django.db import transaction

from transcripts import ledger
from transcripts.errors import InvalidInput
from transcripts.generation.tasks import (
    GenerationOptions,
    RunChoice,
    queue_again,
    start_generation,
)
from transcripts.jsonvalue import JsonObject
from transcripts.ledger.lifecycle import STOPPED
from transcripts.models import Message, Project, Run, RunOrigin, RunStatus, Thread

# start_generation is every other start's last step, and callers start with it directly too.
__all__ = [
    "TITLE_FROM_TEXT",
    "retry",
    "start_answer",
    "start_continue",
    "start_edit",
    "start_generation",
    "start_regenerate",
    "start_reply",
    "start_thread",
]


def _user_message_event(text: str, metadata: JsonObject | None = None) -> JsonObject:
    """The `message` event (seq 1) of a user's message of text, or InvalidInput when empty."""
    text = text.strip()
    if not text:
        raise InvalidInput("the message is empty", field="text")
    data: JsonObject = {"role": "user", "parts": [{"type": "text", "text": text}]}
    if metadata:
        data["metadata"] = dict(metadata)
    return {"seq": 1, "kind": "message", "data": data}


def start_regenerate(*, message: Message, **options: Unpack[GenerationOptions]) -> Run:
    """Regenerate an assistant message: a new run forked from its parent."""
    if message.role != "assistant":
        raise InvalidInput("only an assistant message can be regenerated", role=message.role)
    return start_generation(thread=message.thread, fork_from=message.parent_id, **options)


def start_edit(*, message: Message, text: str, **options: Unpack[GenerationOptions]) -> Run:
    """Edit a user message: a run forked from its parent, the edited message first."""
    if message.role != "user":
        raise InvalidInput("only a user message can be edited", role=message.role)
    prefix = [_user_message_event(text)]
    return start_generation(
        thread=message.thread, fork_from=message.parent_id, prefix=prefix, **options
    )


def start_reply(
    *,
    thread: Thread,
    text: str,
    fork_from: object = ledger.HEAD,
    message_metadata: JsonObject | None = None,
    **options: Unpack[GenerationOptions],
) -> Run:
    """Reply at the head (or below fork_from): the user's message (with message_metadata) is
    committed, then answered."""
    event = _user_message_event(text, message_metadata)
    with transaction.atomic():
        turn, _ = ledger.begin_run(
            thread=thread, fork_from=fork_from, generator="user", origin=RunOrigin.WEB
        )
        ledger.append_events(run=turn, events=[event])
        ledger.commit_run(run=turn)
        question = turn.messages.get()
        return start_generation(thread=thread, fork_from=question.id, **options)


def start_answer(*, message: Message, **options: Unpack[GenerationOptions]) -> Run:
    """Answer a user message that has none (a stopped or failed reply): a run forked from it."""
    if message.role != "user":
        raise InvalidInput("only a user message can be answered", role=message.role)
    return start_generation(thread=message.thread, fork_from=message.id, **options)


def start_continue(*, message: Message, **options: Unpack[RunChoice]) -> Run:
    """Carry on a stopped answer: a new branch beside it that starts with its text.

    The run forks where the stopped message did and begins with that text, so the new branch
    holds the whole answer; the generator gets the `continues` parameter and, for the demo,
    the stopped run's seed, so it streams exactly the rest of the same answer.
    """
    if message.role != "assistant" or message.metadata.get("finishReason") != STOPPED:
        raise InvalidInput("only a stopped answer can be continued", role=message.role)
    text = "".join(str(p.get("text", "")) for p in message.parts if p.get("type") == "text")
    stopped = message.run
    choice: RunChoice = {
        **options,
        "parameters": {
            **dict(options.get("parameters") or {}),
            "continues": message.id,
            "seed": str(stopped.parameters.get("seed") or stopped.id),
        },
    }
    prefix: list[JsonObject] = (
        [{"seq": 1, "kind": "text-delta", "data": {"delta": text}}] if text else []
    )
    return start_generation(
        thread=message.thread,
        fork_from=message.parent_id,
        prefix=prefix,
        metadata={"continues": message.id},
        **choice,
    )


def retry(*, run: Run) -> Run:
    """Run a failed or cancelled run's generation again, from the same fork point."""
    if run.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
        raise InvalidInput("only a failed or cancelled run can be retried", status=run.status)
    return queue_again(run)


# A thread started without a title is named after the start of its first message.
TITLE_FROM_TEXT = 80


def start_thread(
    *, project: Project, title: str = "", text: str, **options: Unpack[GenerationOptions]
) -> Run:
    """A new thread in project: its first user message committed and the answer queued (all or
    nothing); without a title it is named after the start of the message."""
    _user_message_event(text)  # an empty message is refused before the thread is created
    title = " ".join(title.split())
    if not title:
        words = " ".join(text.split())
        title = words
        if len(words) > TITLE_FROM_TEXT:
            title = words[:TITLE_FROM_TEXT].rsplit(" ", 1)[0] + "\N{HORIZONTAL ELLIPSIS}"
    with transaction.atomic():
        thread, _ = ledger.create_thread(project=project, title=title)
        return start_reply(thread=thread, text=text, **options)

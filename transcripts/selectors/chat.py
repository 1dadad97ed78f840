"""Reads of the AI SDK chat backend: a project's thread by chat id, the stored tree a
client's history is matched against, the messages a turn answers and the open runs."""

from __future__ import annotations

from transcripts.formats.ai_sdk.chat_history import Children, StoredRow, children_of
from transcripts.models import OPEN_STATUSES, Message, Run, Thread


def thread_by_external_id(project_id: int, external_id: str) -> Thread | None:
    """The project's thread whose external id is external_id, None when there is none."""
    return Thread.objects.filter(project_id=project_id, external_id=external_id).first()


def chat_tree(thread: Thread) -> Children:
    """The thread's messages by parent, with the ids a client may know each by."""
    rows: list[StoredRow] = list(
        Message.objects.filter(thread=thread).values_list(
            "id",
            "parent_id",
            "role",
            "run_id",
            "active",
            "metadata__sourceMessageId",
            "metadata__extra__ai_sdk__id",
        )
    )
    return children_of(rows)


def message_by_id(message_id: str) -> Message:
    """The stored message message_id (one the chat's tree holds)."""
    return Message.objects.get(pk=message_id)


def last_question(thread: Thread) -> Message | None:
    """The deepest user message of the thread's active path, None when it has none."""
    return (
        Message.objects.filter(thread=thread, active=True, role="user").order_by("-depth").first()
    )


def open_runs(thread: Thread) -> list[Run]:
    """The thread's open runs, newest first."""
    runs = Run.objects.filter(thread=thread, status__in=OPEN_STATUSES).select_related("thread")
    return list(runs.defer("snapshot").order_by("-created_at", "-id"))

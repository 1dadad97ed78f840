"""Creating threads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from transcripts.errors import Conflict, InvalidInput
from transcripts.ids import require_ulid
from transcripts.ledger.checks import check_object, check_storable
from transcripts.models import Project, Thread

MAX_TITLE = 500


def create_thread(
    *,
    project: Project,
    title: str = "",
    metadata: Mapping[str, Any] | None = None,
    agents: Mapping[str, Any] | None = None,
    thread_id: str | None = None,
    parent_thread: Thread | None = None,
) -> tuple[Thread, bool]:
    """Create a thread in project; with a client-chosen id the call is idempotent.

    An id already taken by a thread of another project is refused without saying where.
    """
    if not isinstance(title, str) or len(title) > MAX_TITLE:
        raise InvalidInput(
            f"title must be a string of at most {MAX_TITLE} characters", field="title"
        )
    check_storable(title, "title")
    metadata = check_object(metadata, "metadata")
    agents = check_object(agents, "agents")
    if thread_id is not None:
        thread_id = require_ulid(thread_id, "id")
        existing = Thread.objects.filter(pk=thread_id).first()
        if existing is not None:
            if existing.project_id != project.pk:
                raise Conflict("this thread id cannot be used: choose another", threadId=thread_id)
            return existing, False
    with transaction.atomic():
        thread = Thread(
            project=project,
            title=title,
            metadata=dict(metadata or {}),
            agents=dict(agents or {}),
            parent_thread=parent_thread,
        )
        if thread_id is not None:
            thread.id = thread_id
        thread.save(force_insert=True)
    return thread, True

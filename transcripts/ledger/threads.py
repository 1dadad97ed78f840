"""Creating threads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from transcripts.errors import InvalidInput
from transcripts.ids import require_ulid
from transcripts.ledger.checks import check_object, check_storable
from transcripts.models import Thread

MAX_TITLE = 500


def create_thread(
    *,
    title: str = "",
    metadata: Mapping[str, Any] | None = None,
    agents: Mapping[str, Any] | None = None,
    thread_id: str | None = None,
    parent_thread: Thread | None = None,
) -> tuple[Thread, bool]:
    """Create a thread; with a client-chosen id the call is idempotent."""
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
            return existing, False
    with transaction.atomic():
        thread = Thread(
            title=title,
            metadata=dict(metadata or {}),
            agents=dict(agents or {}),
            parent_thread=parent_thread,
        )
        if thread_id is not None:
            thread.id = thread_id
        thread.save(force_insert=True)
    return thread, True

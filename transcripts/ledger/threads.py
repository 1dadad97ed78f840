"""Creating threads."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import IntegrityError, transaction

from transcripts.errors import Conflict, InvalidInput
from transcripts.ids import require_ulid
from transcripts.ledger.organise import add_metadata_tags
from transcripts.ledger.storable import check_object, check_storable
from transcripts.models import Project, Thread

MAX_TITLE = 500


def create_thread(
    *,
    project: Project,
    title: str = "",
    metadata: Mapping[str, object] | None = None,
    agents: Mapping[str, object] | None = None,
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
        add_metadata_tags(project.pk, thread.metadata)
    return thread, True


MAX_EXTERNAL_ID = 500


def thread_for_external_id(
    *, project: Project, external_id: str, title: str = ""
) -> tuple[Thread, bool]:
    """The thread of project known by external_id (a client's chat id), created (with title)
    on first use; True when created. Two first uses at once both get the one thread."""
    if not isinstance(external_id, str) or not 1 <= len(external_id) <= MAX_EXTERNAL_ID:
        raise InvalidInput(
            f"the id must be a string of 1 to {MAX_EXTERNAL_ID} characters", field="id"
        )
    check_storable(external_id, "id")
    title = " ".join(title.split())[:MAX_TITLE]
    return find_or_create_external(project=project, external_id=external_id, title=title)


def find_or_create_external(
    *, project: Project, external_id: str, title: str
) -> tuple[Thread, bool]:
    """The thread of project known by external_id (checked by the caller), created with title
    when new; True when created. Two first uses at once both get the one thread."""
    existing = Thread.objects.filter(project=project, external_id=external_id).first()
    if existing is not None:
        return existing, False
    check_storable(title, "title")
    try:
        with transaction.atomic():
            thread = Thread(project=project, external_id=external_id, title=title)
            thread.save(force_insert=True)
    except IntegrityError:  # the other first use won: (project, external_id) is unique
        return Thread.objects.get(project=project, external_id=external_id), False
    return thread, True

"""A new thread from any message: the branch from the root to it, copied under new ids.

The copy is written as an import is (`importing.TreeWriter`): one run per run of the source
whose messages it holds, recorded as `message` events that project to exactly the copied
messages, so the copy replays from its own event log. Nothing of the source changes; the new
thread's `parent_thread` is the source and its metadata's `forkedFrom` names the message.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from transcripts import selectors
from transcripts.errors import Conflict
from transcripts.formats.document import TreeThread
from transcripts.jsonvalue import JsonObject
from transcripts.ledger.audit import record_audit
from transcripts.ledger.importing import TreeWriter
from transcripts.ledger.rights import require
from transcripts.ledger.threads import MAX_TITLE
from transcripts.models import Message, Run, Thread
from transcripts.permissions import User, member_access

UNTITLED = "Untitled thread"


# What fork_title adds: a fork of a fork says only where it starts itself.
_SUFFIX = re.compile(r" \(from message \d+\)$")


def fork_title(title: str, position: int) -> str:
    """The new thread's title: the source's, saying which message it starts from."""
    suffix = f" (from message {position})"
    return (_SUFFIX.sub("", title) or UNTITLED)[: MAX_TITLE - len(suffix)] + suffix


def _runs_of(path: list[Message]) -> list[JsonObject]:
    """One exported-run entry per source run, holding the path's messages of that run (in
    order), with its generator, model and parameters; usage stays with the source run, so
    the copy counts no tokens or cost twice."""
    wanted = {m.run_id for m in path}
    sources = {r.id: r for r in Run.objects.filter(pk__in=wanted).defer("snapshot")}
    runs: list[JsonObject] = []
    for message in path:
        if runs and runs[-1]["sourceRunId"] == message.run_id:
            ids = runs[-1]["messageIds"]
            assert isinstance(ids, list)
            ids.append(message.id)
            continue
        run = sources[message.run_id]
        runs.append(
            {
                "sourceRunId": run.id,
                "messageIds": [message.id],
                "generator": run.generator or "fork",
                "model": run.model,
                "parameters": run.parameters,
                "metadata": {"forkedFromRunId": run.id},
                "createdAt": run.created_at.isoformat(),
            }
        )
    return runs


def _tree(source: Thread, path: list[Message]) -> TreeThread:
    """The branch as the in-memory thread an import writes."""
    leaf = path[-1]
    return TreeThread(
        title=fork_title(source.title, len(path)),
        messages=[m.as_canonical() for m in path],
        active_leaf=leaf.id,
        metadata={
            "forkedFrom": {
                "threadId": source.id,
                "title": source.title,
                "messageId": leaf.id,
                "position": len(path),
            }
        },
        agents=dict(source.agents),
        runs=_runs_of(path),
    )


def fork_thread(
    *, message: Message, user: User | None, via: str = "web", **audit_details: Any
) -> Thread:
    """A new thread in the same project holding the path from the root to message (only that
    branch, new ids, the same roles, parts and metadata), audited as `fork`.

    user must edit the project; None is an API token whose scopes the API checked
    (audit_details name it). A hidden thread is not forked (its content would come back
    into sight); a redacted message is copied redacted, as the source shows it; flags and
    reports stay with the source.
    """
    source = Thread.objects.get(pk=message.thread_id)
    if user is not None:
        access = member_access(user, thread_id=source.id)
        require(user.is_authenticated and access.can_edit, "start threads from messages")
    if source.hidden:
        raise Conflict("a hidden thread cannot be forked: unhide it first", threadId=source.id)
    # As stored now: a message read earlier may have left the active path since.
    message = Message.objects.get(pk=message.pk)
    message.thread = source
    path = selectors.path_to(message)
    with transaction.atomic():
        with TreeWriter(project=source.project, keep_ids=False) as writer:
            thread = writer.add(_tree(source, path))
            thread.parent_thread = source
            writer.flush()
        _keep_redactions(thread, path)
        record_audit(
            user if user is not None else AnonymousUser(),
            "fork",
            thread,
            thread_id=thread.id,
            via=via,
            sourceThreadId=source.id,
            sourceMessageId=message.id,
            messages=len(path),
            **audit_details,
        )
    return thread


def _keep_redactions(thread: Thread, path: list[Message]) -> None:
    """Mark the copies of redacted messages redacted too (their content is the marker)."""
    for message in path:
        if message.redacted_at is not None:
            Message.objects.filter(thread=thread, depth=message.depth).update(
                redacted_at=message.redacted_at
            )

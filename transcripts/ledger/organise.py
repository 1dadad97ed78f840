"""Organising threads: rename, archive, tags, pins, delete, and the same for many at once.

A member acts through the pages (user given: their role is checked here again); an API token
acts with user=None once the API checked its scopes, and audit_details name it. Every change
is audited; a change that changes nothing writes nothing.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from transcripts.errors import InvalidInput
from transcripts.jsonvalue import JsonValue
from transcripts.ledger.audit import record_audit
from transcripts.ledger.deletion import Deleted, delete_threads
from transcripts.ledger.rights import account_of, require
from transcripts.models import Tag, Thread, ThreadPin
from transcripts.permissions import User, member_access

# A title given in the app or by PATCH (imports may bring longer ones, up to 500).
MAX_RENAME = 200
MAX_TAG = 40
MAX_TAGS = 20

BulkAction = Literal["archive", "unarchive", "tag", "untag", "delete"]
BULK_ACTIONS: tuple[BulkAction, ...] = ("archive", "unarchive", "tag", "untag", "delete")


def _by(user: User | None) -> User:
    """Who the audit log names: the member, or nobody for an API token (named in details)."""
    return user if user is not None else AnonymousUser()


def _require(user: User | None, thread: Thread, *, admin: bool, action: str) -> None:
    """Refuse a member whose role in the thread's project does not allow action."""
    if user is None:
        return
    access = member_access(user, thread_id=thread.id)
    require(user.is_authenticated and (access.can_administer if admin else access.can_edit), action)


def clean_title(title: object) -> str:
    """A new title as stored: 1 to MAX_RENAME characters once its spaces are collapsed, no
    control characters."""
    if not isinstance(title, str):
        raise InvalidInput("title must be a string", field="title")
    if any(unicodedata.category(c) == "Cc" for c in title):
        raise InvalidInput("title must not hold control characters", field="title")
    cleaned = " ".join(title.split())
    if not 1 <= len(cleaned) <= MAX_RENAME:
        raise InvalidInput(f"title must be 1 to {MAX_RENAME} characters long", field="title")
    return cleaned


def clean_tag(name: object) -> str:
    """A tag as stored: 1 to MAX_TAG characters, no control characters, spaces collapsed."""
    if not isinstance(name, str):
        raise InvalidInput("a tag must be a string", field="tags")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise InvalidInput("a tag must not hold control characters", field="tags")
    tag = " ".join(name.split())
    if not 1 <= len(tag) <= MAX_TAG:
        raise InvalidInput(f"a tag must be 1 to {MAX_TAG} characters long", field="tags")
    return tag


def clean_tags(names: Iterable[object]) -> list[str]:
    """Tags as stored: each cleaned, duplicates dropped (first kept), at most MAX_TAGS."""
    tags = list(dict.fromkeys(clean_tag(name) for name in names))
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"a thread holds at most {MAX_TAGS} tags", field="tags")
    return tags


def _add_to_vocabulary(project_id: int, tags: Iterable[str]) -> None:
    """Make tags part of the project's vocabulary (those already in it stay as they are)."""
    Tag.objects.bulk_create(
        [Tag(project_id=project_id, name=name) for name in tags], ignore_conflicts=True
    )


def add_metadata_tags(project_id: int, *metadatas: Mapping[str, object]) -> None:
    """Add the valid tags of new threads' metadata.tags (an API client's, the demo's, an
    import's) to the project's vocabulary; the others stay in the metadata, out of it."""
    found: dict[str, None] = {}
    for metadata in metadatas:
        tags = metadata.get("tags")
        if isinstance(tags, list):
            valid = (" ".join(t.split()) for t in tags if isinstance(t, str))
            found.update((t, None) for t in valid if _is_tag(t))
    if found:
        _add_to_vocabulary(project_id, found)


def _is_tag(name: str) -> bool:
    """Whether name (spaces collapsed) is a tag clean_tag keeps."""
    return 1 <= len(name) <= MAX_TAG and not any(unicodedata.category(c) == "Cc" for c in name)


@dataclass(frozen=True)
class ThreadChange:
    """What update_thread is asked to change (None: leave it)."""

    title: str | None = None
    tags: list[str] | None = None
    archived: bool | None = None


def update_thread(
    *, thread: Thread, user: User | None, change: ThreadChange, **audit_details: Any
) -> bool:
    """Rename, retag and (un)archive a thread in one transaction (editor); each change audited
    ("rename", "retag", "archive"/"unarchive"). Whether anything changed."""
    _require(user, thread, admin=False, action="organise threads")
    title = clean_title(change.title) if change.title is not None else None
    tags = clean_tags(change.tags) if change.tags is not None else None
    with transaction.atomic():
        stored = Thread.objects.select_for_update().only("title", "metadata", "archived")
        current = stored.get(pk=thread.pk)
        fields: dict[str, object] = {}
        by = _by(user)
        if title is not None and title != current.title:
            fields["title"] = title
            record_audit(
                by, "rename", thread, thread_id=thread.id, old=current.title, new=title,
                **audit_details,
            )  # fmt: skip
        if tags is not None and tags != current.tag_names:
            _add_to_vocabulary(thread.project_id, tags)
            fields["metadata"] = {**current.metadata, "tags": tags}
            record_audit(
                by, "retag", thread, thread_id=thread.id, old=list[JsonValue](current.tag_names),
                new=list[JsonValue](tags), **audit_details,
            )  # fmt: skip
        if change.archived is not None and change.archived != current.archived:
            fields["archived"] = change.archived
            action = "archive" if change.archived else "unarchive"
            record_audit(by, action, thread, thread_id=thread.id, **audit_details)
        if not fields:
            return False
        Thread.objects.filter(pk=thread.pk).update(**fields)
        for name, value in fields.items():
            setattr(thread, name, value)
    return True


def tag_thread(*, thread: Thread, user: User | None, tag: str, **audit_details: Any) -> bool:
    """Add tag to the thread (and to the project's vocabulary); whether it was missing."""
    name = clean_tag(tag)
    if name in thread.tag_names:
        return False
    change = ThreadChange(tags=[*thread.tag_names, name])
    return update_thread(thread=thread, user=user, change=change, **audit_details)


def untag_thread(*, thread: Thread, user: User | None, tag: str, **audit_details: Any) -> bool:
    """Take tag off the thread; a tag the thread does not carry is refused (nothing changes)."""
    name = clean_tag(tag)
    if name not in thread.tag_names:
        raise InvalidInput(f"this thread has no tag {name!r}", field="tag")
    change = ThreadChange(tags=[t for t in thread.tag_names if t != name])
    return update_thread(thread=thread, user=user, change=change, **audit_details)


def set_pinned(*, thread: Thread, user: User, pinned: bool) -> bool:
    """Pin the thread for user (or unpin it): pins are one reader's own, so any member who
    reads the thread may pin it. Audited; whether it changed."""
    account = account_of(user)
    access = member_access(user, thread_id=thread.id)
    require(account is not None and access.can_read, "pin threads")
    assert account is not None
    with transaction.atomic():
        if pinned:
            _, changed = ThreadPin.objects.get_or_create(user=account, thread_id=thread.id)
        else:
            pins = ThreadPin.objects.filter(user=account, thread_id=thread.id)
            changed = pins.delete()[0] > 0
        if changed:
            record_audit(user, "pin" if pinned else "unpin", thread, thread_id=thread.id)
    return changed


def delete_thread(*, thread: Thread, user: User | None, **audit_details: Any) -> Deleted:
    """Delete the thread and everything in it (project admin, or an admin-scoped token); the
    audit record, with what went, stays."""
    _require(user, thread, admin=True, action="delete threads")
    project = thread.project
    with transaction.atomic():
        deleted = delete_threads([thread.id])
        details: dict[str, Any] = {**deleted.as_dict(), **audit_details, "title": thread.title}
        record_audit(_by(user), "delete", thread, thread_id=thread.id, project=project, **details)
    return deleted


def organise_many(
    *, threads: Sequence[Thread], user: User, action: BulkAction, tag: str = ""
) -> int:
    """Apply one bulk action to threads (all checked before any is changed, in one
    transaction); how many changed. tag: the tag of "tag" and "untag"."""
    if action not in BULK_ACTIONS:
        raise InvalidInput(f"unknown action {action!r}", field="action")
    if not threads:
        raise InvalidInput("choose at least one thread", field="ids")
    for thread in threads:
        _require(user, thread, admin=action == "delete", action=f"{action} threads")
    name = clean_tag(tag) if action in ("tag", "untag") else ""
    if action == "untag" and not any(name in t.tag_names for t in threads):
        raise InvalidInput(f"none of these threads has the tag {name!r}", field="tag")
    changed = 0
    with transaction.atomic():
        for thread in threads:
            changed += _organise_one(thread, user, action, name)
    return changed


def _organise_one(thread: Thread, user: User, action: BulkAction, tag: str) -> int:
    """One thread of a bulk action: 1 if it changed."""
    if action == "delete":
        delete_thread(thread=thread, user=user, bulk=True)
        return 1
    if action in ("archive", "unarchive"):
        change = ThreadChange(archived=action == "archive")
    elif action == "tag":
        change = ThreadChange(tags=list(dict.fromkeys([*thread.tag_names, tag])))
    else:
        change = ThreadChange(tags=[t for t in thread.tag_names if t != tag])
    return int(update_thread(thread=thread, user=user, change=change, bulk=True))

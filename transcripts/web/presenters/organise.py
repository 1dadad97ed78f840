"""What the organise menus show: a thread's tags and pin, the actions a role allows."""

from __future__ import annotations

from dataclasses import dataclass

from transcripts.models import Thread
from transcripts.permissions import Access, User
from transcripts.selectors.organise import is_pinned, tag_vocabulary


@dataclass(frozen=True)
class Organise:
    """The conversation header's ⋯ menu and tag chips of one thread for one reader."""

    pinned: bool
    tags: list[str]
    can_edit: bool
    can_delete: bool
    vocabulary: list[str]


def organise_thread(user: User, thread: Thread, access: Access) -> Organise:
    """The header's organise facts (the vocabulary only for those who may tag)."""
    return Organise(
        pinned=is_pinned(user, thread.id),
        tags=thread.tag_names,
        can_edit=access.can_edit,
        can_delete=access.can_administer,
        vocabulary=tag_vocabulary(thread.project_id) if access.can_edit else [],
    )

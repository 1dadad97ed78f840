"""Message previews: one line per message, computed in SQL so lists never load the parts."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import OuterRef, Subquery
from django.db.models.expressions import RawSQL

from transcripts.ids import ulid_of
from transcripts.models import Message, Thread

# A message in one line: its text (every text part), else what it calls or holds (tool names,
# part types).
_PREVIEW_SQL = """
    left(coalesce(
        nullif(btrim(array_to_string(ARRAY(SELECT jsonb_array_elements_text(
            jsonb_path_query_array(transcripts_message.parts, '$[*] ? (@.type == "text").text')
        )), ' ')), ''),
        nullif(array_to_string(ARRAY(SELECT coalesce(p->>'toolName', p->>'type')
            FROM jsonb_array_elements(CASE jsonb_typeof(transcripts_message.parts)
                WHEN 'array' THEN transcripts_message.parts ELSE '[]'::jsonb END) p), ', '), ''),
        ''), %s)
"""


def message_preview(length: int) -> RawSQL:
    """An expression for Message querysets: the preview, one character longer than length
    when there is more (finish it with `ellipsize`)."""
    return RawSQL(_PREVIEW_SQL, [length + 1])


def ellipsize(text: str, length: int) -> str:
    """text cut to length characters, with an ellipsis when it was longer."""
    text = " ".join(text.split())
    return text if len(text) <= length else text[:length].rstrip() + "\N{HORIZONTAL ELLIPSIS}"


def message_previews(message_ids: Sequence[str], length: int = 90) -> dict[str, str]:
    """The one-line preview of each message (see message_preview), in one query."""
    rows = (
        Message.objects.filter(pk__in=message_ids)
        .annotate(preview=message_preview(length))
        .values_list("id", "preview")
    )
    return {i: ellipsize(s or "", length) for i, s in rows}


def first_user_previews(thread_ids: Sequence[str], length: int = 90) -> dict[str, str]:
    """The preview of each thread's first user message on its active path, in one query
    (each thread's lookup walks the active path's (thread, depth) index from the top)."""
    if not thread_ids:
        return {}
    first_user = (
        Message.objects.filter(thread_id=OuterRef("pk"), active=True, role="user")
        .order_by("depth")
        .values("id")[:1]
    )
    firsts = Thread.objects.filter(pk__in=thread_ids).values(first=Subquery(first_user))
    rows = (
        Message.objects.filter(pk__in=firsts)
        .annotate(preview=message_preview(length))
        .values_list("thread_id", "preview")
    )
    return {ulid_of(t): ellipsize(s or "", length) for t, s in rows}


def message_in(thread: Thread, message_id: str) -> Message | None:
    """The message of thread with this id, or None."""
    return Message.objects.filter(pk=message_id, thread=thread).first()

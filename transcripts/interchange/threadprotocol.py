"""ThreadProtocol's database side of import: JSON Lines files, and one copy per project."""

from __future__ import annotations

import json

from django.db.models import Q

from transcripts.errors import Conflict, InvalidInput
from transcripts.formats.document import TreeThread
from transcripts.formats.threadprotocol import document_thread_id
from transcripts.ids import uuid_to_ulid
from transcripts.models import Project, Thread


def parse_json_lines(text: str) -> list[object]:
    """The values of a JSON Lines text, one per non-blank line, or InvalidInput naming the
    line that is not JSON."""
    values: list[object] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except RecursionError:
            raise InvalidInput(f"the JSON at line {number} is nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"invalid JSON Lines at line {number}, column {exc.colno}: {exc.msg}",
                line=number,
                column=exc.colno,
            ) from None
        except ValueError as exc:  # integers of thousands of digits, among others
            raise InvalidInput(f"line {number} holds a value that cannot be read: {exc}") from None
    return values


def refuse_reimports(trees: list[TreeThread], *, project: Project) -> None:
    """Conflict when a thread of trees came from a ThreadProtocol thread the project holds.

    A document names its thread: importing it again would make two threads that both export
    as that one, so the second import is refused. The answer names the document's thread only,
    never the thread that holds it (which may be hidden from the importer): the same answer
    whether the importer can see that thread or not.
    """
    for tree in trees:
        thread_id = document_thread_id(tree)
        if thread_id is None:
            continue
        same = Q(metadata__extra__threadprotocol__fields__thread_id=thread_id)
        ours = uuid_to_ulid(thread_id)
        if ours is not None:
            same |= Q(pk=ours)
        if Thread.objects.filter(same, project=project).exists():
            raise Conflict(
                f"the ThreadProtocol thread {thread_id} is already imported in this project; "
                "delete that thread to import it again",
                documentThreadId=thread_id,
            )

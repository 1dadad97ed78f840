"""The shape of a moderation action, and the words every surface says about one.

`transcripts.ledger.moderation.ACTIONS` holds one `ModerationAction` per action, next to the
ledger function each performs; the queue (`/moderation/`) and the admin read them from there.
The sentences built from an action's words ("Hid 3 threads.", "The thread is already hidden:
nothing changed.") and the text a redaction erases, shown before it is confirmed, live here
so that the web pages and the admin say the same without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from django.db.models import Model

from transcripts.models import Message
from transcripts.permissions import Role, User

# What an action is done to.
Target = Literal["thread", "message", "run", "report"]
# What the redaction confirmation shows of the text it erases: enough to recognise it.
REDACTION_PREVIEW_CHARS = 1500


@dataclass(frozen=True)
class ActionWords:
    """How an action reads once done ("Hid"), and the state it leaves ("hidden")."""

    done: str
    state: str


@dataclass(frozen=True)
class Confirmation:
    """What an action that asks first says on its confirmation page: the title, the warning
    (what is lost), how the note on objects left alone names it ("redaction needs the admin
    role"), and, with shows, the content each object loses."""

    title: str
    warning: str
    needs: str
    shows: Callable[[Message], RedactionPreview] | None = None


@dataclass(frozen=True)
class ModerationAction:
    """One moderation action: its name (the form value of the queue and, unless `admin_name`
    says otherwise, of the admin), what it is done to, the role it needs, its button label,
    how it reads once done ("Hid") and the state it leaves ("hidden"), the verb of its audit
    record, and the ledger function that performs it.

    `perform` takes `user`, the target under its target's name (`thread=`, `message=`...) and
    `reason`, and answers whether it changed anything. With `on_reports` the queue offers it
    on a report's thread or message; `offered_when` (a field of the target, and whether it is
    set) says in which state the queue offers it: hide while `hidden` is not set. With a
    `confirmation` it asks first (a redaction shows the text it erases). The admin offers it
    on its target's list as `admin_name`, described by `admin_label` (default: the name and
    the label).
    """

    name: str
    target: Target
    role: Role
    label: str
    done: str
    state: str
    audit: str
    perform: Callable[..., bool]
    on_reports: bool = False
    offered_when: tuple[str, bool] | None = None
    confirmation: Confirmation | None = None
    admin_name: str = ""
    admin_label: str = ""

    @property
    def confirm(self) -> bool:
        """Whether the action asks for confirmation first."""
        return self.confirmation is not None

    @property
    def words(self) -> ActionWords:
        """How the action reads once done, and the state it leaves."""
        return ActionWords(self.done, self.state)

    def run(self, *, user: User, target: Model, reason: str) -> bool:
        """Perform the action on target; whether it changed anything."""
        return self.perform(user=user, reason=reason, **{self.target: target})

    def offered_on(self, target: Model) -> bool:
        """Whether the action makes sense on target as it stands (hide: a visible thread)."""
        if self.offered_when is None:
            return True
        field, is_set = self.offered_when
        return bool(getattr(target, field)) == is_set


# The words of audited admin actions outside moderation, which share its sentences.
OTHER_WORDS = {
    "revoke_token": ActionWords("Revoked", "revoked"),
    "revoke_share": ActionWords("Revoked", "revoked"),
}


# --- sentences -----------------------------------------------------------------------------


def counted(count: int, noun: str) -> str:
    """ "1 thread", "3 threads"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def done_message(words: ActionWords, count: int, noun: str) -> str:
    """ "Hid 1 thread.", "Redacted 3 messages."."""
    return f"{words.done} {counted(count, noun)}."


def unchanged_message(words: ActionWords, count: int, noun: str) -> str:
    """ "1 thread was already hidden: nothing changed." (nothing was written either)."""
    verb = "was" if count == 1 else "were"
    return f"{counted(count, noun)} {verb} already {words.state}: nothing changed."


def already_message(words: ActionWords, noun: str) -> str:
    """ "The thread is already hidden: nothing changed." (one object; nothing was written)."""
    return f"The {noun} is already {words.state}: nothing changed."


# --- what a redaction erases ---------------------------------------------------------------


@dataclass(frozen=True)
class RedactionPreview:
    """The content a redaction erases, as text, clipped for reading, with its full size."""

    text: str
    size: int
    shown: int
    parts: int

    @property
    def clipped(self) -> bool:
        return self.shown < self.size


def _part_text(part: dict[str, object]) -> str:
    """One message part as the confirmation shows it."""
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        text = str(part.get("text", ""))
        return f"(reasoning) {text}" if kind == "reasoning" else text
    if kind == "tool-call":
        return f"(call {part.get('toolName', '')}) {json.dumps(part.get('input'))}"
    if kind == "tool-result":
        return f"(result of {part.get('toolName', '')}) {json.dumps(part.get('output'))}"
    if kind == "file":
        return f"(file {part.get('name') or ''}) {part.get('url', '')}"
    return json.dumps(part)


def redaction_preview(message: Message) -> RedactionPreview:
    """What redacting message erases, every part as text, clipped to a readable length."""
    parts = [p for p in message.parts if isinstance(p, dict)]
    text = "\n\n".join(_part_text(part) for part in parts)
    shown = text[:REDACTION_PREVIEW_CHARS]
    return RedactionPreview(text=shown, size=len(text), shown=len(shown), parts=len(parts))

"""The canonical message: its roles, its parts and their schema, defined once.

Every door into the message tree checks against these models: a `message` event
(`events.py`, with `Message`), the `reasoning`, `tool-call`, `tool-result` and `file` events
(the part fields without `type`), and each message of a canonical document
(`formats/canonical.py`, with `TreeMessage`). The projector writes every part in full
(`full_parts`), so what a thread stores and exports always has every field.

Where the event check and the document check used to disagree, one rule now holds for both:

- A tool call's `input`, a tool result's `output`, `isError` and `toolName` may be left out
  (hand-made documents and clients often do); they are written as null, null, false and the
  name of the call the result answers ("" when that call is unknown). Null is accepted for a
  result's `toolName` and means the same.
- A reasoning `signature` and a file `name` are strings or null; null means "none", and the
  stored part leaves the field out, as it does for the `reasoning` and `file` events.
- Tool call ids, tool call names, mime types and urls are non-empty strings.
- `createdAt` is null or an ISO 8601 timestamp with a timezone that falls within the years
  1..9999 in UTC: PostgreSQL can store it and Python can read it back.

A document's message differs from a `message` event only where a node of the tree must: it
has an `id`, a `parentMessageId` and metadata stating its `schemaVersion`.

The same shapes as plain dicts, the form the projector writes and readers get, are the
TypedDicts `CanonicalMessage` and `Part` (`TextPart`, `ReasoningPart`, `ToolCallPart`,
`ToolResultPart`, `FilePart`).

Fields a part does not name are kept with it. The format converters use one of them,
`sourceFields` (see `formats/document.py`): per format, what the source's own block had
beyond the part, so an export in that format gives the block back as it was imported.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Literal, NotRequired, TypedDict, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import ErrorDetails

from transcripts.jsonvalue import JsonObject, JsonValue
from transcripts.times import unstorable_reason

SCHEMA_VERSION = 1
MessageRole = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = get_args(MessageRole)
NonEmpty = Annotated[str, Field(min_length=1)]


class WireModel(BaseModel):
    """A strictly typed JSON object that keeps the fields it does not name."""

    model_config = ConfigDict(extra="allow", strict=True)


# --- parts: the fields each part type carries, as its event carries them, then the part ---


class ReasoningFields(WireModel):
    """Reasoning text, with the provider's signature when it sent one."""

    text: str
    signature: str | None = None


class ToolCallFields(WireModel):
    """A call of a named tool; input is any JSON value."""

    toolCallId: NonEmpty
    toolName: NonEmpty
    input: object = None


class ToolResultFields(WireModel):
    """What a tool call gave back; toolName defaults to the call's."""

    toolCallId: NonEmpty
    toolName: str | None = None
    output: object = None
    isError: bool = False


class FileFields(WireModel):
    """A file by URL (a data URL when inline)."""

    mimeType: NonEmpty
    url: NonEmpty
    name: str | None = None


class TextPartModel(WireModel):
    """Plain text."""

    type: Literal["text"]
    text: str


class ReasoningPartModel(ReasoningFields):
    """A reasoning part."""

    type: Literal["reasoning"]


class ToolCallPartModel(ToolCallFields):
    """A tool-call part."""

    type: Literal["tool-call"]


class ToolResultPartModel(ToolResultFields):
    """A tool-result part."""

    type: Literal["tool-result"]


class FilePartModel(FileFields):
    """A file part."""

    type: Literal["file"]


PartModel = Annotated[
    TextPartModel | ReasoningPartModel | ToolCallPartModel | ToolResultPartModel | FilePartModel,
    Field(discriminator="type"),
]
PART_TYPES: tuple[str, ...] = tuple(
    get_args(model.model_fields["type"].annotation)[0] for model in get_args(get_args(PartModel)[0])
)


# --- messages ----------------------------------------------------------------------------


class _MessageBody(WireModel):
    role: MessageRole
    createdAt: str | None = None
    parts: list[PartModel]

    @field_validator("createdAt")
    @classmethod
    def _storable_time(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("createdAt must be an ISO 8601 timestamp") from None
        reason = unstorable_reason(moment)
        if reason is not None:
            raise ValueError(f"createdAt {reason}")
        return value


class Message(_MessageBody):
    """A message as a `message` event carries it: the ledger gives it its place in the tree."""

    id: str | None = None
    metadata: dict[str, object] | None = None


class MessageMetadata(WireModel):
    """A stored message's metadata: free-form, with the part schema version it follows."""

    schemaVersion: object = Field(default=None, validate_default=True)

    @field_validator("schemaVersion")
    @classmethod
    def _supported(cls, value: object) -> object:
        if type(value) is not int or not 1 <= value <= SCHEMA_VERSION:
            raise ValueError("expected a supported schema version")
        return value


class TreeMessage(_MessageBody):
    """A node of a thread's message tree, as the projector writes it and documents carry it."""

    id: str
    parentMessageId: str | None = None
    metadata: MessageMetadata


# --- the plain-dict form: what the models dump and the projector writes -----------------


class TextPart(TypedDict):
    """A text part."""

    type: Literal["text"]
    text: str


class ReasoningPart(TypedDict):
    """A reasoning part; a stored one without a signature leaves the field out."""

    type: Literal["reasoning"]
    text: str
    signature: NotRequired[str]


class ToolCallPart(TypedDict):
    """A tool-call part."""

    type: Literal["tool-call"]
    toolCallId: str
    toolName: str
    input: JsonValue


class ToolResultPart(TypedDict):
    """A tool-result part; toolName is None only before full_parts fills it in."""

    type: Literal["tool-result"]
    toolCallId: str
    toolName: str | None
    output: JsonValue
    isError: bool


class FilePart(TypedDict):
    """A file part; a stored one without a name leaves the field out."""

    type: Literal["file"]
    mimeType: str
    url: str
    name: NotRequired[str]


Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart


class CanonicalMessage(TypedDict):
    """A stored message, a node of a thread's tree (the dump of `TreeMessage`)."""

    id: str
    parentMessageId: str | None
    role: str
    parts: list[Part]
    createdAt: str | None
    metadata: JsonObject


def canonical_message(
    key: str,
    parent: str | None,
    role: str,
    parts: list[Part],
    created_at: str | None,
    metadata: JsonObject,
) -> CanonicalMessage:
    """A stored canonical message (the projector's), its fields in their order."""
    return {
        "id": key,
        "parentMessageId": parent,
        "role": role,
        "parts": parts,
        "createdAt": created_at,
        "metadata": metadata,
    }


def message_object(
    key: str,
    parent: str | None,
    role: str,
    parts: JsonValue,
    created_at: str | None,
    metadata: JsonValue,
) -> JsonObject:
    """A canonical message as a plain JSON object, the fields of `canonical_message` in the
    same order, for messages not checked yet (the formats' readers, see
    `formats.document.make_message`) or read back as JSON (exports). A TypedDict is no JSON
    object to the type checker, hence the two forms."""
    return {
        "id": key,
        "parentMessageId": parent,
        "role": role,
        "parts": parts,
        "createdAt": created_at,
        "metadata": metadata,
    }


def as_canonical(messages: list[JsonObject]) -> list[CanonicalMessage]:
    """Stored canonical messages (checked on the way in) typed as such, for code that reads
    them from plain-dict holders (a `TreeThread`)."""
    return cast(list[CanonicalMessage], messages)


def plain_messages(messages: list[CanonicalMessage]) -> list[JsonObject]:
    """messages (the same list) as JSON objects, for readers of plain JSON (a TypedDict is no
    `dict[str, JsonValue]` to the type checker, though every value of one is JSON)."""
    return cast(list[JsonObject], messages)


# --- writing parts in full ---------------------------------------------------------------

# Optional fields whose null means "none": the stored part leaves them out.
_NULL_MEANS_NONE = {"reasoning": "signature", "file": "name"}


def full_parts(
    parts: Iterable[Mapping[str, JsonValue]], tool_names: dict[str, str]
) -> list[JsonObject]:
    """Copies of valid parts with every optional field as the projector writes it.

    tool_names maps the tool call ids met so far to their tool names; each call among parts
    is added to it, so a result later in the same list finds its call's name.
    """
    out: list[JsonObject] = []
    for given in parts:
        part: JsonObject = copy.deepcopy(dict(given))
        part_type = str(part["type"])
        if part_type == "tool-call":
            part.setdefault("input", None)
            tool_names[str(part["toolCallId"])] = str(part["toolName"])
        elif part_type == "tool-result":
            if part.get("toolName") is None:
                part["toolName"] = tool_names.get(str(part["toolCallId"]), "")
            part.setdefault("output", None)
            part.setdefault("isError", False)
        elif part_type in _NULL_MEANS_NONE and part.get(_NULL_MEANS_NONE[part_type], "") is None:
            del part[_NULL_MEANS_NONE[part_type]]
        out.append(part)
    return out


def stored_parts(
    parts: Iterable[Mapping[str, JsonValue]], tool_names: dict[str, str]
) -> list[Part]:
    """full_parts typed as the parts they are: parts must have passed the part models."""
    return cast(list[Part], full_parts(parts, tool_names))


# --- locating schema errors --------------------------------------------------------------

_TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")


def error_path(error: ErrorDetails) -> str:
    """The JSON path (".parts[0].text") a schema error points at, relative to the object.

    pydantic puts the part type into the location of an error inside a part (parts, 0,
    "text", "text"); a reader wants the field, so the type is left out, and an unknown or
    missing type is reported at the part's `type`.
    """
    path = ""
    loc = error["loc"]
    for index, step in enumerate(loc):
        if isinstance(step, int):
            path += f"[{step}]"
        elif not (index and isinstance(loc[index - 1], int) and step in PART_TYPES):
            path += f".{step}"
    if error["type"] in _TAG_ERRORS:
        path += ".type"
    return path

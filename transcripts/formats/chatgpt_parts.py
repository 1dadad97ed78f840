"""The parts of one ChatGPT message: every content type, asset pointers and Canvas documents.

Content types with a part of their own become it (text, reasoning, files); the rest become a
labelled text part (`[web page] …`, `[ChatGPT memory] …`) and keep their raw content in
`metadata.extra.chatgpt.content`. Asset pointers (`sediment://…`, `file-service://…`) are
looked up in the export's zip when there is one: found, they become inline file parts; not
found (or too large) a labelled part names them and the import report says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
)

from .document import file_part
from .sources import Skips, labelled
from .zips import Archive, Asset, textdoc_members


@dataclass
class ExportContext:
    """Where a conversation comes from: the report's log and, for a zip, its files."""

    skips: Skips = field(default_factory=Skips)
    archive: Archive | None = None
    source: str = "conversations.json"
    textdocs: dict[str, str] = field(default_factory=dict)
    used_textdocs: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.archive is not None and not self.textdocs:
            self.textdocs = textdoc_members(self.archive)

    def where(self, path: str) -> str:
        """A location for the report: the file, then the JSON path in it."""
        return f"{self.source} {path}"


def content_parts(
    content: JsonObject,
    content_type: str,
    extra: JsonObject,
    where: str,
    ctx: ExportContext,
) -> list[JsonObject]:
    """Canonical parts for a message's content; raw content kept in extra unless plain text."""
    items = content.get("parts")
    if content_type == "text":
        return [
            {"type": "text", "text": item}
            for item in (items if isinstance(items, list) else [])
            if isinstance(item, str) and item
        ]
    extra["content"] = content  # shared with the parsed document: an import only reads it
    if content_type == "multimodal_text":
        return _multimodal(items if isinstance(items, list) else [], where, ctx)
    if content_type in ("code", "execution_output", "system_error", "tether_quote"):
        text = content.get("text")
        return [{"type": "text", "text": text}] if isinstance(text, str) and text else []
    if content_type == "thoughts":
        return _thoughts(content.get("thoughts"))
    if content_type == "reasoning_recap":
        text = content.get("content")
        return [{"type": "reasoning", "text": text}] if isinstance(text, str) else []
    if content_type == "sonic_webpage":
        title = _joined_strings(content.get("title"), content.get("url"), sep=" — ")
        body = _first_string(content.get("text"), content.get("snippet"))
        ctx.skips.count("labelled")
        return [labelled(f"web page: {title}" if title else "web page", body)]
    if content_type == "tether_browsing_display":
        text = _joined_strings(content.get("summary"), content.get("result"))
        return [{"type": "text", "text": text}] if text else []
    if content_type == "user_editable_context":
        text = _joined_strings(content.get("user_profile"), content.get("user_instructions"))
        return [{"type": "text", "text": text}] if text else []
    if content_type == "model_editable_context":
        text = _first_string(content.get("model_set_context"))
        ctx.skips.count("labelled")
        return [labelled("ChatGPT memory", text)]
    # Unknown content types: whatever text they carry, else a label naming the type.
    texts = [item for item in (items if isinstance(items, list) else []) if isinstance(item, str)]
    for key in ("text", "result", "content"):
        value = content.get(key)
        if isinstance(value, str):
            texts.append(value)
    parts: list[JsonObject] = [{"type": "text", "text": text} for text in texts if text]
    if parts:
        return parts
    ctx.skips.add(where, f"{content_type} content", "no part type holds it: kept as a label")
    ctx.skips.count("labelled")
    return [labelled(f"ChatGPT {content_type} content")]


def canvas_input(recipient: str, text: str) -> JsonValue:
    """The JSON payload of a Canvas (canmore) call as its tool input, else None."""
    if recipient.startswith("canmore."):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def canvas_document(raw_meta: JsonObject, where: str, ctx: ExportContext) -> list[JsonObject]:
    """The Canvas document a canmore tool message names, as a file part from `textdocs/`."""
    canvas = raw_meta.get("canvas")
    textdoc_id = canvas.get("textdoc_id") if isinstance(canvas, dict) else None
    if not isinstance(textdoc_id, str) or not textdoc_id or ctx.archive is None:
        return []
    member = next(
        (name for base, name in sorted(ctx.textdocs.items()) if base.startswith(textdoc_id)), None
    )
    if member is None:
        ctx.skips.add(
            where, f"canvas {textdoc_id}", "its document is not in the export's textdocs/"
        )
        return []
    ctx.used_textdocs.add(member)
    found = ctx.archive.asset(member)
    if isinstance(found, str):
        ctx.skips.add(where, f"canvas {textdoc_id}", found)
        return [labelled(f"canvas document {member} not inlined: {found}")]
    ctx.skips.count("assets")
    title = canvas.get("title") if isinstance(canvas, dict) else None
    return [file_part(found.mime_type, found.url, title if isinstance(title, str) else found.name)]


def _thoughts(thoughts: JsonValue) -> list[JsonObject]:
    if isinstance(thoughts, str):
        return [{"type": "reasoning", "text": thoughts}]
    out: list[JsonObject] = []
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, str):
            out.append({"type": "reasoning", "text": thought})
        elif isinstance(thought, dict):
            text = _joined_strings(thought.get("summary"), thought.get("content"))
            out.append({"type": "reasoning", "text": text})
    return out


def _multimodal(items: JsonArray, where: str, ctx: ExportContext) -> list[JsonObject]:
    parts: list[JsonObject] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            if item:
                parts.append({"type": "text", "text": item})
            continue
        if not isinstance(item, dict):
            continue
        item_type = item.get("content_type")
        pointer = item.get("asset_pointer")
        nested = item.get("audio_asset_pointer")
        if not isinstance(pointer, str) and isinstance(nested, dict):
            # Voice-mode turns wrap their audio pointer (and video frames) in one item.
            item, pointer, item_type = nested, nested.get("asset_pointer"), "audio_asset_pointer"
        if isinstance(pointer, str) and pointer:
            parts.append(
                _pointer_part(item, pointer, str(item_type), f"{where}.parts[{index}]", ctx)
            )
        elif isinstance(item.get("text"), str) and item["text"]:
            # audio_transcription and other text-bearing items.
            parts.append({"type": "text", "text": item["text"]})
        else:
            ctx.skips.add(
                f"{where}.parts[{index}]", f"{item_type} item", "no text or file: kept as a label"
            )
            ctx.skips.count("labelled")
            parts.append(labelled(f"ChatGPT {item_type}"))
    return parts


def _pointer_part(
    item: JsonObject, pointer: str, item_type: str, where: str, ctx: ExportContext
) -> JsonObject:
    kind = {"image_asset_pointer": "image", "audio_asset_pointer": "audio"}.get(item_type)
    mime = item.get("mime_type") or item.get("format")
    mime = mime if isinstance(mime, str) and "/" in mime else None
    metadata = item.get("metadata")
    name = metadata.get("file_name") if isinstance(metadata, dict) else None
    label = kind or "file"
    if ctx.archive is None:
        ctx.skips.add(
            where, f"{label} {pointer}", "not in conversations.json: import the export's zip"
        )
        fallback = f"{kind}/*" if kind else "application/octet-stream"
        return file_part(mime or fallback, pointer, name)
    asset_id = pointer.split("://", 1)[-1]
    member = ctx.archive.find_asset(asset_id) if asset_id else None
    if member is None:
        ctx.skips.add(where, f"{label} {pointer}", "its file is not in the export")
        ctx.skips.count("labelled")
        return labelled(f"missing {label}: {pointer} is not in the export")
    found: Asset | str = ctx.archive.asset(member, mime)
    if isinstance(found, str):
        ctx.skips.add(where, f"{label} {pointer}", found)
        ctx.skips.count("labelled")
        return labelled(f"{label} {member} not inlined: {found}")
    ctx.skips.count("assets")
    return file_part(found.mime_type, found.url, name if isinstance(name, str) else found.name)


def _joined_strings(*values: JsonValue, sep: str = "\n\n") -> str:
    return sep.join(value for value in values if isinstance(value, str) and value)


def _first_string(*values: JsonValue) -> str | None:
    return next((value for value in values if isinstance(value, str) and value), None)

"""Vercel AI SDK `UIMessage[]`, as `useChat` stores them (v5 and v6).

One assistant UIMessage spans every step of a run, and a tool part holds both the call and
its result. Import splits it into canonical messages: an assistant message per step, each
followed by a `tool` message holding the results of its calls (keys `<id>`, `<id>-tool`,
`<id>-2`, `<id>-2-tool`, …). Export merges such a chain back into one UIMessage. What the
canonical parts cannot hold (part states, step starts, sources, data parts, provider
metadata, the UIMessage id and metadata) rides in `metadata.extra.ai_sdk` of the first
message of the chain, so an import followed by an export gives back the same UIMessages.
Canonical message metadata travels in the UIMessage `metadata` under `transcripts`, with
its time unless the import had to make one up (`untimed`). Lost on export: the JSON type of
error outputs (`errorText` is text).
"""

from __future__ import annotations

import copy
from typing import Any

from transcripts.jsonvalue import JsonObject, JsonValue, as_object, as_str, object_at
from transcripts.message_schema import CanonicalMessage, ToolResultPart, as_canonical

from ..document import (
    TreeThread,
    active_path,
    file_part,
    linear_thread,
    make_message,
    output_text,
    tool_call_part,
    tool_result_part,
)
from ..validation import Problems

_TOOL_STATES = (
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
)
_RESULT_STATES = ("output-available", "output-error", "output-denied")
_UI_ROLES = ("system", "user", "assistant")


def export_ai_sdk(thread: TreeThread) -> list[dict[str, Any]]:
    """The active path as UIMessages."""
    groups: list[list[CanonicalMessage]] = []
    for message in as_canonical(active_path(thread)):
        role = message["role"]
        # An assistant message opens a UIMessage unless it continues the same stored chain.
        joins = (
            groups
            and role in ("assistant", "tool")
            and groups[-1][0]["role"] in ("assistant", "tool")
            and not (role == "assistant" and "id" in _stored(message))
        )
        if joins:
            groups[-1].append(message)
        else:
            groups.append([message])
    return [_export_group(group) for group in groups]


def _stored(message: CanonicalMessage) -> JsonObject:
    """What an import kept of the UIMessage, in `metadata.extra.ai_sdk` ({} when nothing)."""
    extra = as_object(message["metadata"].get("extra")) or {}
    return as_object(extra.get("ai_sdk")) or {}


def _export_group(group: list[CanonicalMessage]) -> JsonObject:
    head = group[0]
    stored = _stored(head)
    role = "assistant" if head["role"] == "tool" else head["role"]
    ui: JsonObject = {"id": stored.get("id", head["id"]), "role": role}
    metadata = copy.deepcopy(as_object(stored.get("metadata")) or {})
    segments: list[JsonValue] = [_segment_metadata(message) for message in group]
    if any(segments):
        metadata["transcripts"] = segments
    if metadata or "metadata" in stored:
        ui["metadata"] = metadata
    layout = stored.get("layout")
    parts = _from_layout(group, layout) if isinstance(layout, list) else None
    ui["parts"] = parts if parts is not None else _default_parts(group)
    return ui


def _segment_metadata(message: CanonicalMessage) -> JsonObject:
    metadata = copy.deepcopy(message["metadata"])
    metadata.pop("schemaVersion", None)
    # The ledger's note of the key an import gave the message: the UIMessage id says it.
    metadata.pop("sourceMessageId", None)
    extra = metadata.get("extra", {})
    untimed = False
    if isinstance(extra, dict):
        stored = extra.pop("ai_sdk", None)
        untimed = isinstance(stored, dict) and stored.get("untimed") is True
        if not extra:
            metadata.pop("extra", None)
    segment: JsonObject = {}
    # An imported message without a time got the time of the import: not the UIMessage's.
    if message["createdAt"] is not None and not untimed:
        segment["createdAt"] = message["createdAt"]
    if metadata:
        segment["metadata"] = metadata
    return segment


def _results(group: list[CanonicalMessage]) -> dict[str, ToolResultPart]:
    results: dict[str, ToolResultPart] = {}
    for message in group:
        if message["role"] != "tool":
            continue
        for part in message["parts"]:
            if part["type"] == "tool-result":
                results[part["toolCallId"]] = part
    return results


def _tool_part(
    call_id: str, name: str | None, tool_input: JsonValue, result: ToolResultPart | None
) -> JsonObject:
    part: JsonObject = {"type": f"tool-{name}", "toolCallId": call_id}
    part["state"] = "input-available"
    part["input"] = copy.deepcopy(tool_input)
    if result is not None and result["isError"]:
        part["state"] = "output-error"
        part["errorText"] = output_text(result["output"])
    elif result is not None:
        part["state"] = "output-available"
        part["output"] = copy.deepcopy(result["output"])
    return part


def _default_parts(group: list[CanonicalMessage]) -> list[JsonValue]:
    results = _results(group)
    called: set[str] = set()
    parts: list[JsonValue] = []
    for message in group:
        if message["role"] == "assistant":
            parts.append({"type": "step-start"})
        for part in message["parts"]:
            if part["type"] == "text":
                parts.append({"type": "text", "text": part["text"]})
            elif part["type"] == "reasoning":
                reasoning: JsonObject = {"type": "reasoning", "text": part["text"]}
                if "signature" in part:
                    reasoning["providerMetadata"] = {"anthropic": {"signature": part["signature"]}}
                parts.append(reasoning)
            elif part["type"] == "file":
                file: JsonObject = {
                    "type": "file",
                    "mediaType": part["mimeType"],
                    "url": part["url"],
                }
                if "name" in part:
                    file["filename"] = part["name"]
                parts.append(file)
            elif part["type"] == "tool-call":
                called.add(part["toolCallId"])
                result = results.get(part["toolCallId"])
                parts.append(
                    _tool_part(part["toolCallId"], part["toolName"], part["input"], result)
                )
            elif part["toolCallId"] not in called:
                # A result whose call is not in this UIMessage still needs a home.
                orphan = _tool_part(part["toolCallId"], part["toolName"], None, part)
                orphan["type"] = "dynamic-tool"
                orphan["toolName"] = part["toolName"]
                parts.append(orphan)
    if group[0]["role"] != "assistant":
        parts = [part for part in parts if part != {"type": "step-start"}]
    return parts


def _from_layout(group: list[CanonicalMessage], layout: list[JsonValue]) -> list[JsonValue] | None:
    """The stored part list refilled with current content, or None when it no longer fits."""
    content = [part for message in group if message["role"] != "tool" for part in message["parts"]]
    results = _results(group)
    out: list[JsonValue] = []
    position = 0
    for entry in layout:
        if not isinstance(entry, dict):
            return None
        if "raw" in entry:
            out.append(copy.deepcopy(entry["raw"]))
            continue
        if position >= len(content):
            return None
        part = content[position]
        position += 1
        fields = copy.deepcopy(as_object(entry.get("fields")) or {})
        rebuilt: JsonObject
        if part["type"] == "text" or part["type"] == "reasoning":
            rebuilt = {"type": part["type"], "text": part["text"]}
        elif part["type"] == "file":
            rebuilt = {"type": "file", "mediaType": part["mimeType"], "url": part["url"]}
            if "name" in part:
                rebuilt["filename"] = part["name"]
        elif part["type"] == "tool-call":
            rebuilt = {"type": fields.pop("type", f"tool-{part['toolName']}")}
            if rebuilt["type"] == "dynamic-tool":
                rebuilt["toolName"] = part["toolName"]
            rebuilt["toolCallId"] = part["toolCallId"]
            result = results.get(part["toolCallId"])
            state = fields.get("state")
            if state in _RESULT_STATES and result is None:
                return None
            if entry.get("hasInput", True):
                rebuilt["input"] = copy.deepcopy(part["input"])
            if result is not None and state == "output-available":
                rebuilt["output"] = copy.deepcopy(result["output"])
            elif result is not None and state == "output-error":
                rebuilt["errorText"] = output_text(result["output"])
        else:
            return None
        rebuilt.update(fields)
        out.append(rebuilt)
    return out if position == len(content) else None


def import_ai_sdk(data: object) -> list[TreeThread]:
    """One linear thread from a UIMessage list (or `{"messages": [...]}`)."""
    problems = Problems()
    base = "$"
    if isinstance(data, dict) and "messages" in data:
        data, base = data["messages"], "$.messages"
    items = problems.array(data, base) or []
    messages: list[JsonObject] = []
    for path, raw in problems.objects(items, base):
        messages.extend(_import_ui_message(raw, path, problems))
    problems.raise_if_any()
    return [linear_thread(messages)]


def _import_ui_message(raw: JsonObject, path: str, problems: Problems) -> list[JsonObject]:
    ui_id = problems.req_string(raw, "id", path)
    role = raw.get("role")
    if role not in _UI_ROLES:
        problems.add(f"{path}.role", "expected system, user or assistant")
    items = problems.array(raw.get("parts"), f"{path}.parts")
    ui_metadata = raw.get("metadata")
    if ui_metadata is not None and not isinstance(ui_metadata, dict):
        problems.add(f"{path}.metadata", "expected an object")
    if ui_id is None or not isinstance(role, str) or role not in _UI_ROLES or items is None:
        return []
    # Segments: (role, parts); an assistant step's results go to a tool segment after it.
    segments: list[tuple[str, list[JsonObject]]] = [(role, [])]
    pending: list[JsonObject] = []
    layout: list[JsonValue] = []

    def flush() -> None:
        if pending:
            segments.append(("tool", list(pending)))
            segments.append((role, []))
            pending.clear()

    for ppath, part in problems.objects(items, f"{path}.parts"):
        part_type = part.get("type")
        if not isinstance(part_type, str):
            problems.add(f"{ppath}.type", "expected a string")
            continue
        if part_type in ("text", "reasoning"):
            text = problems.req_string(part, "text", ppath)
            if text is None:
                continue
            flush()
            converted: JsonObject = {"type": part_type, "text": text}
            signature = _signature(part)
            if part_type == "reasoning" and signature is not None:
                converted["signature"] = signature
            segments[-1][1].append(converted)
            layout.append({"fields": _rest(part, ("type", "text"))})
        elif part_type == "file":
            mime = problems.req_string(part, "mediaType", ppath)
            url = problems.req_string(part, "url", ppath)
            if mime is None or url is None:
                continue
            flush()
            segments[-1][1].append(file_part(mime, url, part.get("filename")))
            layout.append({"fields": _rest(part, ("type", "mediaType", "url", "filename"))})
        elif part_type == "dynamic-tool" or part_type.startswith("tool-"):
            call = _import_tool(part, part_type, ppath, problems)
            if call is None:
                continue
            tool_call, result = call
            segments[-1][1].append(tool_call)
            if result is not None:
                pending.append(result)
            used = ("toolCallId", "toolName", "input", "output", "errorText")
            fields = _rest(part, used)
            # errorText is rebuilt from the result only in the output-error state.
            if "errorText" in part and part.get("state") != "output-error":
                fields["errorText"] = copy.deepcopy(part["errorText"])
            layout.append({"fields": fields, "hasInput": "input" in part})
        else:
            if part_type == "step-start" and pending:
                flush()
            elif part_type == "step-start" and segments[-1][1]:
                segments.append((role, []))
            layout.append({"raw": copy.deepcopy(part)})
    if pending:
        segments.append(("tool", list(pending)))
    segments = [segment for n, segment in enumerate(segments) if n == 0 or segment[1]]
    stored = ui_metadata.get("transcripts") if isinstance(ui_metadata, dict) else None
    per_segment = stored if isinstance(stored, list) and len(stored) == len(segments) else None
    extra: JsonObject = {"id": ui_id, "layout": layout}
    if isinstance(ui_metadata, dict):
        kept = dict(ui_metadata)
        if per_segment is not None:
            kept.pop("transcripts")
        # An empty object is kept too: the UIMessage had `metadata: {}`.
        if kept or per_segment is None:
            extra["metadata"] = copy.deepcopy(kept)
    out: list[JsonObject] = []
    step = 1
    for n, (segment_role, parts) in enumerate(segments):
        if n == 0:
            key = ui_id
        elif segment_role == "tool":
            key = f"{out[-1]['id']}-tool"
        else:
            step += 1
            key = f"{ui_id}-{step}"
        metadata: JsonObject = {}
        created_at = None
        saved = as_object(per_segment[n]) if per_segment is not None else None
        if saved is not None:
            metadata.update(copy.deepcopy(as_object(saved.get("metadata")) or {}))
            created_at = as_str(saved.get("createdAt"))
        if n == 0:
            object_at(metadata, "extra")["ai_sdk"] = extra
        if created_at is None:
            object_at(object_at(metadata, "extra"), "ai_sdk")["untimed"] = True
        out.append(make_message(key, None, segment_role, parts, created_at, metadata))
    return out


def _signature(part: JsonObject) -> str | None:
    provider = part.get("providerMetadata")
    anthropic = provider.get("anthropic") if isinstance(provider, dict) else None
    signature = anthropic.get("signature") if isinstance(anthropic, dict) else None
    return signature if isinstance(signature, str) else None


def _rest(part: JsonObject, used: tuple[str, ...]) -> JsonObject:
    return {key: copy.deepcopy(value) for key, value in part.items() if key not in used}


def _import_tool(
    part: JsonObject, part_type: str, path: str, problems: Problems
) -> tuple[JsonObject, JsonObject | None] | None:
    call_id = problems.req_string(part, "toolCallId", path)
    if part_type == "dynamic-tool":
        name = problems.req_string(part, "toolName", path)
    else:
        name = part_type[len("tool-") :]
    state = part.get("state")
    if state not in _TOOL_STATES:
        problems.add(f"{path}.state", f"expected one of {', '.join(_TOOL_STATES)}")
        return None
    if call_id is None or name is None:
        return None
    call = tool_call_part(call_id, name, copy.deepcopy(part.get("input")))
    if state == "output-available":
        output, is_error = copy.deepcopy(part.get("output")), False
    elif state == "output-error":
        output, is_error = part.get("errorText", ""), True
    elif state == "output-denied":
        approval = part.get("approval")
        reason = approval.get("reason") if isinstance(approval, dict) else None
        output, is_error = reason if isinstance(reason, str) else "denied", True
    else:
        return call, None
    return call, tool_result_part(call_id, name, output, is_error=is_error)

"""Google Gemini `generateContent` body `{"systemInstruction"?, "contents": [...]}`.

Export writes REST camelCase; import also reads the SDK's snake_case. Thought signatures
ride in `metadata.extra.gemini.thought_signatures`, a map from the index of a canonical part
to the signature Gemini attached to it; what else a part has beyond its canonical part (a
call or response without an `id`, …) in the part's `sourceFields.gemini`. Tool results are
`functionResponse` parts in a user content with `response` = `{"output": value}` (or
`{"error": value}` when isError), which import unwraps. Code Gemini ran itself
(`executableCode`, `codeExecutionResult`) becomes a `code_execution` tool call and its
result. So an imported body comes back exactly, but for newer part kinds without a canonical
part, which are skipped.
Canonical content from elsewhere loses on export: message ids, timestamps, metadata, file
names, reasoning signatures of other providers, and non-object tool inputs (wrapped as
`{"input": value}`). Other top-level keys (generationConfig, tools, …) stay in the thread's
`metadata.extra.gemini` and come back on export.
"""

from __future__ import annotations

import copy
from typing import Any

from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
    object_of,
    text_of,
)

from .document import (
    TreeThread,
    active_path,
    data_url,
    extra_of,
    file_part,
    keep_source_fields,
    linear_thread,
    make_message,
    metadata_extra,
    parse_data_url,
    parts_of,
    restore_source_fields,
    set_extra,
    tool_call_part,
    tool_result_part,
)
from .validation import Problems

FORMAT = "gemini"
# The tool name of code run by Gemini's own code execution tool.
CODE_EXECUTION = "code_execution"
_SNAKE = {
    "system_instruction": "systemInstruction",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "inline_data": "inlineData",
    "file_data": "fileData",
    "mime_type": "mimeType",
    "file_uri": "fileUri",
    "thought_signature": "thoughtSignature",
    "display_name": "displayName",
    "executable_code": "executableCode",
    "code_execution_result": "codeExecutionResult",
}


def export_gemini(thread: TreeThread) -> dict[str, Any]:
    """The active path as a generateContent request body."""
    # Any: callers (generators, tests) index the written document freely.
    body: JsonObject = dict(metadata_extra(thread.metadata, "gemini"))
    system: list[JsonObject] = []
    contents: list[JsonObject] = []
    for message in active_path(thread):
        if message["role"] == "system":
            system.extend(
                {"text": part["text"]} for part in parts_of(message) if part["type"] == "text"
            )
            continue
        role = "model" if message["role"] == "assistant" else "user"
        contents.append({"role": role, "parts": _export_parts(message)})
    if system:
        body["systemInstruction"] = {"parts": system}
    body["contents"] = contents
    return body


def _export_parts(message: JsonObject) -> list[JsonObject]:
    signatures = extra_of(message, "gemini").get("thought_signatures", {})
    out: list[JsonObject] = []
    for index, part in enumerate(parts_of(message)):
        item = restore_source_fields(part, FORMAT, _export_part(part))
        signature = signatures.get(str(index)) if isinstance(signatures, dict) else None
        if isinstance(signature, str):
            item["thoughtSignature"] = signature
        out.append(item)
    return out


def _export_part(part: JsonObject) -> JsonObject:
    """The Gemini part a canonical part becomes, before the source's own fields are put back."""
    part_type = part["type"]
    item: JsonObject
    if part_type == "text":
        item = {"text": part["text"]}
    elif part_type == "reasoning":
        item = {"text": part["text"], "thought": True}
    elif part_type == "tool-call":
        value = part["input"]
        item = {
            "functionCall": {
                "id": part["toolCallId"],
                "name": part["toolName"],
                "args": value if isinstance(value, dict) else {"input": value},
            }
        }
    elif part_type == "tool-result":
        key = "error" if part["isError"] else "output"
        item = {
            "functionResponse": {
                "id": part["toolCallId"],
                "name": part["toolName"],
                "response": {key: part["output"]},
            }
        }
    else:
        inline = parse_data_url(text_of(part["url"]))
        if inline is not None:
            item = {"inlineData": {"mimeType": part["mimeType"], "data": inline[1]}}
        else:
            item = {"fileData": {"mimeType": part["mimeType"], "fileUri": part["url"]}}
    return item


def _camel(value: JsonValue) -> JsonValue:
    """A copy with the SDK's snake_case keys renamed to REST camelCase (payloads untouched)."""
    if isinstance(value, dict):
        out: JsonObject = {}
        for key, item in value.items():
            name = _SNAKE.get(key) or key
            # args and response are the tool's own data: keep their keys as they are.
            out[name] = item if name in ("args", "response") else _camel(item)
        return out
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


def import_gemini(data: object) -> list[TreeThread]:
    """One linear thread from a generateContent body (or a bare contents list)."""
    problems = Problems()
    if isinstance(data, list):
        body: JsonObject = {"contents": _camel(data)}
        base = "$"
    else:
        parsed = problems.obj(data, "$")
        # An empty object is no request body either: `contents` is required.
        body = object_of(_camel(parsed)) if parsed is not None else {"contents": []}
        base = "$.contents"
    messages: list[JsonObject] = []
    system = body.get("systemInstruction")
    if system is not None:
        if isinstance(system, str):
            system = {"parts": [{"text": system}]}
        instruction = problems.obj(system, "$.systemInstruction")
        if instruction is not None:
            ppath = "$.systemInstruction.parts"
            items = problems.array(instruction.get("parts"), ppath) or []
            parts: list[JsonObject] = []
            for ipath, raw in problems.objects(items, ppath):
                text = problems.req_string(raw, "text", ipath)
                if text is not None:
                    parts.append({"type": "text", "text": text})
            messages.append(make_message("m0", None, "system", parts))
    contents = problems.array(body.get("contents"), base) or []
    for path, content in problems.objects(contents, base):
        role = content.get("role", "user")
        if role not in ("user", "model"):
            problems.add(f"{path}.role", "expected user or model")
            continue
        items = problems.array(content.get("parts"), f"{path}.parts") or []
        messages.extend(_import_content(role, items, path, problems, len(messages)))
    problems.raise_if_any()
    extra = {k: v for k, v in body.items() if k not in ("contents", "systemInstruction")}
    return [linear_thread(messages, metadata={"extra": {"gemini": extra}} if extra else {})]


def _import_content(
    role: str, items: JsonArray, path: str, problems: Problems, start: int
) -> list[JsonObject]:
    # Each run of parts of one canonical role becomes a message: results split from prompts.
    groups: list[tuple[str, list[JsonObject], dict[str, str]]] = []
    code_call: list[str] = []
    for ipath, raw in problems.objects(items, f"{path}.parts"):
        if "executableCode" in raw or "codeExecutionResult" in raw:
            part = _code_part(raw, ipath, problems, code_call)
        else:
            part = _import_part(raw, ipath, problems)
        if part is None:
            continue
        target = "assistant" if role == "model" else "user"
        if part["type"] == "tool-result" and role == "user":
            target = "tool"
        if not groups or groups[-1][0] != target:
            groups.append((target, [], {}))
        signature = raw.get("thoughtSignature")
        rebuilt = _export_part(part)
        if isinstance(signature, str):
            groups[-1][2][str(len(groups[-1][1]))] = signature
            rebuilt["thoughtSignature"] = signature
        # A call without an id (Gemini often sends none), a file's display name, …
        keep_source_fields(part, FORMAT, raw, rebuilt)
        groups[-1][1].append(part)
    if not groups:
        groups.append(("assistant" if role == "model" else "user", [], {}))
    out = []
    for offset, (target, parts, signatures) in enumerate(groups):
        metadata: JsonObject = {}
        set_extra(metadata, "gemini", {"thought_signatures": signatures} if signatures else {})
        out.append(make_message(f"m{start + offset}", None, target, parts, metadata=metadata))
    return out


def _code_part(
    raw: JsonObject, path: str, problems: Problems, code_call: list[str]
) -> JsonObject | None:
    """Code Gemini ran (its code execution tool) as a tool call, and what it gave back as the
    call's result; code_call holds the id of the content's latest code, which a result answers.
    """
    if "executableCode" in raw:
        code = problems.obj(raw["executableCode"], f"{path}.executableCode")
        if code is None:
            return None
        # Gemini gives code no id: its place in the document names it.
        code_call[:] = [f"code{path[1:]}"]
        return tool_call_part(code_call[0], CODE_EXECUTION, copy.deepcopy(code))
    result = problems.obj(raw["codeExecutionResult"], f"{path}.codeExecutionResult")
    if result is None:
        return None
    call_id = code_call[0] if code_call else f"code{path[1:]}"
    failed = result.get("outcome") not in (None, "OUTCOME_OK")
    return tool_result_part(call_id, CODE_EXECUTION, copy.deepcopy(result), is_error=failed)


def _import_part(raw: JsonObject, path: str, problems: Problems) -> JsonObject | None:
    if "functionCall" in raw:
        call = problems.obj(raw["functionCall"], f"{path}.functionCall")
        name = None if call is None else problems.req_string(call, "name", f"{path}.functionCall")
        if call is None or name is None:
            return None
        call_id = problems.opt_string(call.get("id"), f"{path}.functionCall.id")
        return tool_call_part(call_id or name, name, copy.deepcopy(call.get("args", {})))
    if "functionResponse" in raw:
        rpath = f"{path}.functionResponse"
        response = problems.obj(raw["functionResponse"], rpath)
        name = None if response is None else problems.req_string(response, "name", rpath)
        if response is None or name is None:
            return None
        call_id = problems.opt_string(response.get("id"), f"{rpath}.id")
        payload = response.get("response", {})
        output, is_error = payload, False
        if isinstance(payload, dict) and len(payload) == 1 and ("output" in payload):
            output = payload["output"]
        elif isinstance(payload, dict) and len(payload) == 1 and ("error" in payload):
            output, is_error = payload["error"], True
        return tool_result_part(call_id or name, name, copy.deepcopy(output), is_error=is_error)
    if "inlineData" in raw:
        blob = problems.obj(raw["inlineData"], f"{path}.inlineData")
        if blob is None:
            return None
        mime = problems.req_string(blob, "mimeType", f"{path}.inlineData")
        data = problems.req_string(blob, "data", f"{path}.inlineData")
        if mime is None or data is None:
            return None
        return file_part(mime, data_url(mime, data))
    if "fileData" in raw:
        file = problems.obj(raw["fileData"], f"{path}.fileData")
        if file is None:
            return None
        uri = problems.req_string(file, "fileUri", f"{path}.fileData")
        mime = problems.opt_string(file.get("mimeType"), f"{path}.fileData.mimeType")
        if uri is None:
            return None
        return file_part(mime or "application/octet-stream", uri)
    if "text" in raw:
        text = problems.string(raw["text"], f"{path}.text")
        if text is None:
            return None
        return {"type": "reasoning" if raw.get("thought") is True else "text", "text": text}
    # Newer part kinds have no canonical part.
    return None

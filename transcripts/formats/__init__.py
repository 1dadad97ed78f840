"""Pure converters between canonical messages and external transcript formats."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from transcripts.errors import FormatError
from transcripts.jsonvalue import JsonArray, JsonObject

from .ai_sdk.messages import export_ai_sdk, import_ai_sdk
from .anthropic import export_anthropic, import_anthropic
from .canonical import FORMAT_NAME, export_canonical, import_canonical
from .chatgpt import import_chatgpt, iter_chatgpt
from .claude_ai import import_claude_ai
from .document import TreeThread
from .gemini import export_gemini, import_gemini
from .librechat import import_librechat
from .markdown import export_markdown
from .open_webui import import_open_webui
from .openai import export_openai, import_openai
from .pydantic_ai import export_pydantic_ai, import_pydantic_ai
from .sources import Skipped, Skips
from .threadprotocol import export_threadprotocol, import_threadprotocol

# Readers of chat-app exports also take a Skips log (see `reports_skips`).
Importer = Callable[..., list[TreeThread]]
# A document (object or array) or, for Markdown, text.
Exporter = Callable[[TreeThread], Mapping[str, object] | Sequence[object]]

__all__ = [
    "FORMATS",
    "FormatError",
    "FormatSpec",
    "Skipped",
    "Skips",
    "TreeThread",
    "detect_format",
    "iter_chatgpt",
]


@dataclass(frozen=True)
class FormatSpec:
    """One format: how to read it, how to write it, and how to serve it as a file."""

    key: str
    label: str
    importer: Importer | None
    exporter: Exporter | None
    content_type: str
    extension: str
    # The importer takes a Skips log as its second argument and records what it left out.
    reports_skips: bool = False


_JSON = "application/json"

FORMATS: dict[str, FormatSpec] = {
    spec.key: spec
    for spec in (
        FormatSpec(
            "canonical",
            "Canonical JSON (every branch)",
            import_canonical,
            export_canonical,
            _JSON,
            "json",
        ),
        FormatSpec(
            "threadprotocol",
            "ThreadProtocol 1.0.0",
            import_threadprotocol,
            export_threadprotocol,
            _JSON,
            "json",
        ),
        FormatSpec(
            "openai", "OpenAI Chat Completions", import_openai, export_openai, _JSON, "json"
        ),
        FormatSpec(
            "anthropic", "Anthropic Messages", import_anthropic, export_anthropic, _JSON, "json"
        ),
        FormatSpec("gemini", "Google Gemini", import_gemini, export_gemini, _JSON, "json"),
        FormatSpec(
            "chatgpt",
            "ChatGPT export (zip or conversations.json)",
            import_chatgpt,
            None,
            _JSON,
            "json",
            reports_skips=True,
        ),
        FormatSpec(
            "claude-ai",
            "Claude.ai export (zip or conversations.json)",
            import_claude_ai,
            None,
            _JSON,
            "json",
            reports_skips=True,
        ),
        FormatSpec(
            "open-webui",
            "Open WebUI chat export",
            import_open_webui,
            None,
            _JSON,
            "json",
            reports_skips=True,
        ),
        FormatSpec(
            "librechat",
            "LibreChat conversation export",
            import_librechat,
            None,
            _JSON,
            "json",
            reports_skips=True,
        ),
        FormatSpec(
            "pydantic-ai",
            "Pydantic AI messages",
            import_pydantic_ai,
            export_pydantic_ai,
            _JSON,
            "json",
        ),
        FormatSpec(
            "ai-sdk", "Vercel AI SDK UIMessages", import_ai_sdk, export_ai_sdk, _JSON, "json"
        ),
        FormatSpec(
            "markdown",
            "Markdown transcript",
            None,
            export_markdown,
            "text/markdown; charset=utf-8",
            "md",
        ),
    )
}


def detect_format(data: object) -> str | None:
    """The key of the format a parsed JSON document looks like, or None when unsure."""
    if isinstance(data, dict):
        return _detect_object(data)
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        first = data[0]
        source = _detect_document(first)
        if source is not None:
            return source
        if first.get("kind") in ("request", "response") and "parts" in first:
            return "pydantic-ai"
        if (
            "parts" in first
            and "id" in first
            and first.get("role") in ("system", "user", "assistant")
        ):
            return "ai-sdk"
        if first.get("role") in ("user", "model") and "parts" in first:
            return "gemini"
        if "role" in first and "content" in first:
            return _detect_messages(data)
    return None


def _detect_document(item: JsonObject) -> str | None:
    """The format whose document (or one item of a list of them) item is: ours, or an app's."""
    if item.get("format") == FORMAT_NAME:
        return "canonical"
    if "actions" in item and "version" in item:
        return "threadprotocol"
    return _detect_chat_app(item)


def _detect_object(data: JsonObject) -> str | None:
    source = _detect_document(data)
    if source is not None:
        return source
    conversations = data.get("conversations")
    if isinstance(conversations, list):
        first = conversations[0] if conversations else None
        if isinstance(first, dict) and "chat_messages" in first:
            return "claude-ai"
        return "chatgpt"
    if "contents" in data:
        return "gemini"
    messages = data.get("messages")
    if isinstance(messages, list):
        if "system" in data:
            return "anthropic"
        if messages and all(isinstance(item, dict) for item in messages):
            first = messages[0]
            if "parts" in first and "id" in first:
                return "ai-sdk"
            return _detect_messages(messages)
        return None
    return None


def _detect_chat_app(item: JsonObject) -> str | None:
    """The chat app whose export (or one conversation of it) item is, if any."""
    if "mapping" in item:
        return "chatgpt"
    if "chat_messages" in item:
        return "claude-ai"
    chat = item.get("chat")
    if isinstance(chat, dict) and ("history" in chat or "messages" in chat):
        return "open-webui"
    if "conversationId" in item and (
        isinstance(item.get("messages"), list) or isinstance(item.get("messagesTree"), list)
    ):
        return "librechat"
    return None


_ANTHROPIC_BLOCKS = (
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
)
_OPENAI_PARTS = ("image_url", "input_audio", "file", "refusal")


def _detect_messages(messages: JsonArray) -> str | None:
    """openai or anthropic for a role/content list; plain text chats read the same either way."""
    for message in messages:
        if not isinstance(message, dict):
            return None
        if message.get("role") in ("tool", "system", "developer") or "tool_calls" in message:
            return "openai"
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                block_type = block.get("type") if isinstance(block, dict) else None
                if block_type in _ANTHROPIC_BLOCKS:
                    return "anthropic"
                if block_type in _OPENAI_PARTS:
                    return "openai"
    return "openai"

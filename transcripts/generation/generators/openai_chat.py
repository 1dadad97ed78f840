"""Any OpenAI-compatible Chat Completions endpoint, streamed with the official openai SDK."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from django.conf import settings

from transcripts.errors import GeneratorError
from transcripts.formats.document import TreeThread
from transcripts.formats.openai import export_openai
from transcripts.generation.generators.base import GenerationRequest, Generator, StreamEvent
from transcripts.jsonvalue import JsonObject, JsonValue, object_of

if TYPE_CHECKING:  # the SDK is imported when a run streams, not with the generators
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

_USAGE_KEYS = {
    "prompt_tokens": "inputTokens",
    "completion_tokens": "outputTokens",
    "total_tokens": "totalTokens",
}
CONTINUE_PROMPT = "Continue your answer exactly where it stopped, without repeating it."
_FINISH = {
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
    "function_call": "tool-calls",
}


def _setting(name: str, env: str, default: str = "") -> str:
    return str(getattr(settings, name, "") or os.environ.get(env, "") or default)


def _api_key() -> str:
    """The API key (never stored, never rendered): TRANSCRIPTS_OPENAI_API_KEY, else
    OPENAI_API_KEY, read from the environment or the settings at call time."""
    return os.environ.get("TRANSCRIPTS_OPENAI_API_KEY") or _setting(
        "TRANSCRIPTS_OPENAI_API_KEY", "OPENAI_API_KEY"
    )


def _base_url() -> str | None:
    """The endpoint's base URL (a local server needs no key), None for OpenAI's own."""
    return _setting("TRANSCRIPTS_OPENAI_BASE_URL", "OPENAI_BASE_URL") or None


def _usage(raw: CompletionUsage) -> JsonObject:
    data = raw.model_dump(exclude_none=True)
    usage: JsonObject = {_USAGE_KEYS.get(k, k): v for k, v in data.items()}
    return usage


def _parse_arguments(text: str) -> JsonValue:
    try:
        value: JsonValue = json.loads(text) if text else {}
        return value
    except ValueError:
        # Models do emit broken JSON; keep it rather than lose it.
        return text


class OpenAIChatGenerator(Generator):
    """Streams from OpenAI, vLLM, llama.cpp, Ollama, OpenRouter… (key from the environment)."""

    name: ClassVar[str] = "openai"
    label: ClassVar[str] = "OpenAI-compatible"

    def default_model(self) -> str:
        return _setting("TRANSCRIPTS_OPENAI_MODEL", "TRANSCRIPTS_OPENAI_MODEL", "gpt-4o-mini")

    def models(self) -> list[str]:
        """TRANSCRIPTS_OPENAI_MODELS (a comma list), else the default model."""
        listed = _setting("TRANSCRIPTS_OPENAI_MODELS", "TRANSCRIPTS_OPENAI_MODELS")
        names = [name.strip() for name in listed.split(",") if name.strip()]
        return list(dict.fromkeys(names)) or [self.default_model()]

    def unavailable_reason(self) -> str:
        """Without a key and without a base URL of its own, every run would fail."""
        if _api_key() or _base_url() is not None:
            return ""
        return "OPENAI_API_KEY not set (nor TRANSCRIPTS_OPENAI_BASE_URL)"

    def build_messages(self, request: GenerationRequest) -> list[JsonObject]:
        """The Chat Completions messages for the conversation so far."""
        history = [m for m in request.messages if not object_of(m.get("metadata")).get("hidden")]
        if request.system_prompt:
            history = [m for m in history if m.get("role") != "system"]
        exported = export_openai(TreeThread(title="", messages=history, active_leaf=None))
        messages: list[JsonObject] = exported["messages"]
        if request.system_prompt:
            messages.insert(0, {"role": "system", "content": request.system_prompt})
        if request.continues and messages and messages[-1].get("role") == "assistant":
            # Chat Completions has no "continue": the cut-off answer is last, so ask for the rest.
            messages.append({"role": "user", "content": CONTINUE_PROMPT})
        return messages

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        import openai

        api_key, base_url = _api_key(), _base_url()
        if not api_key and base_url is None:
            raise GeneratorError("set OPENAI_API_KEY (or TRANSCRIPTS_OPENAI_BASE_URL)")
        client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=120)
        params = request.parameters
        # Any: the SDK types each argument (its messages are TypedDicts); ours are checked JSON.
        kwargs: dict[str, Any] = {
            "model": request.model or self.default_model(),
            "messages": self.build_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        temperature = request.number("temperature")
        if temperature is not None:
            kwargs["temperature"] = temperature
        max_tokens = request.number("maxTokens")
        if max_tokens:
            kwargs["max_tokens"] = int(max_tokens)
        if params.get("tools"):
            kwargs["tools"] = params["tools"]
        try:
            stream = client.chat.completions.create(**kwargs)
            yield from self._events(stream)
        except openai.OpenAIError as exc:
            raise GeneratorError(f"{type(exc).__name__}: {exc}") from exc

    def _events(self, stream: Iterable[ChatCompletionChunk]) -> Iterator[StreamEvent]:
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage: JsonObject | None = None
        yield ("step-started", {})
        for chunk in stream:
            if chunk.usage:
                usage = _usage(chunk.usage)
            for choice in chunk.choices or []:
                delta = choice.delta
                extra = delta.model_extra or {} if hasattr(delta, "model_extra") else {}
                thinking = extra.get("reasoning_content") or extra.get("reasoning")
                if thinking:
                    yield ("reasoning", {"text": str(thinking)})
                if delta.content:
                    yield ("text-delta", {"delta": delta.content})
                for call in delta.tool_calls or []:
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    if call.id:
                        slot["id"] = call.id
                    if call.function and call.function.name:
                        slot["name"] += call.function.name
                    if call.function and call.function.arguments:
                        slot["arguments"] += call.function.arguments
                if choice.finish_reason:
                    finish = choice.finish_reason
        for index in sorted(calls):
            gathered = calls[index]
            yield (
                "tool-call",
                {
                    "toolCallId": gathered["id"] or f"call_{index}",
                    "toolName": gathered["name"] or "unknown",
                    "input": _parse_arguments(gathered["arguments"]),
                },
            )
        finished: JsonObject = {}
        if finish:
            finished["finishReason"] = _FINISH.get(finish, finish)
        if usage:
            finished["usage"] = usage
        yield ("step-finished", finished)

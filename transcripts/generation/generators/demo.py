"""The offline demo generator: deterministic but varied streamed output at a realistic pace."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from transcripts.generation.generators.base import GenerationRequest, Generator, StreamEvent

_OPENINGS = [
    "Good question.",
    "Here is how I would think about it.",
    "Short answer: it depends, but mostly yes.",
    "Let me break this down.",
    "There are two parts to this.",
]
_BODIES = [
    "First, separate what must be durable from what can be recomputed: the event log is the "
    "source of truth, and everything else is a projection of it.",
    "Keep the fast path small. Batch the writes, keep transactions short, and let the "
    "database do the ordering for you.",
    "Start with the simplest version that works end to end, measure it, and only then make "
    "the slow part faster.",
    "A branch is just another path through the same tree; nothing has to be copied or "
    "thrown away to explore an alternative.",
    "Write the invariant down first, then make every write path preserve it, and test it "
    "after every step of a random history.",
]
_CLOSINGS = [
    "Does that help?",
    "Want me to go deeper on any of these?",
    "I can sketch the code for this if you like.",
    "Happy to compare alternatives side by side.",
]
_TOOLS = [
    ("search_docs", {"query": "PostgreSQL LISTEN NOTIFY latency"}, {"hits": 3, "top": "docs"}),
    ("calculator", {"expression": "200000 / 1.7"}, {"result": 117647.06}),
    ("get_time", {"timezone": "Europe/Amsterdam"}, {"time": "09:41"}),
]


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return " ".join(
                str(p.get("text", "")) for p in message.get("parts", []) if p.get("type") == "text"
            )
    return ""


def _tokens(text: str) -> Iterator[str]:
    word = ""
    for char in text:
        word += char
        if char == " ":
            yield word
            word = ""
    if word:
        yield word


class DemoGenerator(Generator):
    """Streams plausible answers without any API key; the seed is the run id and the prompt."""

    name: ClassVar[str] = "demo"
    label: ClassVar[str] = "Demo (offline)"

    def default_model(self) -> str:
        return "demo-1"

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        prompt = _last_user_text(request.messages)
        seed = hashlib.sha256(f"{request.run_id}:{prompt}".encode()).digest()
        rng = random.Random(seed)
        # delayMs: per token; 0 runs at full speed (benchmarks, tests).
        delay = float(request.parameters.get("delayMs", 25)) / 1000
        max_tokens = int(request.parameters.get("maxTokens") or 400)

        def pause() -> None:
            if delay > 0:
                time.sleep(delay * rng.uniform(0.5, 1.5))

        yield ("step-started", {})
        if rng.random() < 0.5:
            thought = (
                f"The user asked about {prompt[:60]!r}. "
                "I should answer directly, then add one practical detail."
            )
            for token in _tokens(thought):
                pause()
                yield ("reasoning", {"text": token})
        if rng.random() < 0.35:
            name, args, output = rng.choice(_TOOLS)
            call_id = f"call_{seed.hex()[:12]}"
            pause()
            yield ("tool-call", {"toolCallId": call_id, "toolName": name, "input": args})
            yield ("step-finished", {"finishReason": "tool-calls", "usage": {"outputTokens": 12}})
            pause()
            yield (
                "tool-result",
                {"toolCallId": call_id, "toolName": name, "output": output, "isError": False},
            )
            yield ("step-started", {})
        text = " ".join(
            [
                rng.choice(_OPENINGS),
                *rng.sample(_BODIES, k=rng.randint(1, 3)),
                rng.choice(_CLOSINGS),
            ]
        )
        count = 0
        for token in _tokens(text):
            if count >= max_tokens:
                break
            pause()
            count += 1
            yield ("text-delta", {"delta": token})
        finish = "length" if count >= max_tokens else "stop"
        usage = {"inputTokens": len(prompt.split()) + 20, "outputTokens": count}
        yield ("step-finished", {"finishReason": finish, "usage": usage})

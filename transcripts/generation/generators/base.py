"""The generator interface."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from transcripts.jsonvalue import JsonObject, objects_in

# (kind, data) of one event of the v1 vocabulary; the runner numbers them.
StreamEvent = tuple[str, JsonObject]


@dataclass(frozen=True)
class GenerationRequest:
    """What a generator is asked: the conversation so far and the parameters."""

    run_id: str
    messages: list[JsonObject]
    model: str = ""
    parameters: JsonObject = field(default_factory=dict)

    @property
    def system_prompt(self) -> str | None:
        """The system prompt override, if any: the `systemPrompt` parameter, which replaces
        the conversation's system messages, or (with `systemPromptMode` "prefix", an
        experiment's choice) comes before their text."""
        value = self.parameters.get("systemPrompt")
        if not value:
            return None
        if self.parameters.get("systemPromptMode") != "prefix":
            return str(value)
        own = [
            str(p.get("text", ""))
            for m in self.messages
            if m.get("role") == "system"
            for p in objects_in(m.get("parts"))
            if p.get("type") == "text"
        ]
        return "\n\n".join([str(value), *[t for t in own if t]])

    def number(self, name: str) -> float | None:
        """A numeric parameter (start_generation stores them as numbers), None when unset."""
        value = self.parameters.get(name)
        return float(value) if isinstance(value, str | int | float) else None

    @property
    def continues(self) -> bool:
        """Whether the run continues a stopped answer (its text ends the messages)."""
        return bool(self.parameters.get("continues"))

    @property
    def partial_answer(self) -> str:
        """The text of the stopped answer a Continue run carries on ('' otherwise)."""
        last = self.messages[-1] if self.messages else {}
        if not self.continues or last.get("role") != "assistant":
            return ""
        parts = objects_in(last.get("parts"))
        return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


class Generator:
    """Produces the events of a run. Subclasses set name and implement stream()."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""

    def default_model(self) -> str:
        """The model used when the run names none."""
        return ""

    def models(self) -> list[str]:
        """The models a person may pick for it, the default first."""
        return [self.default_model()] if self.default_model() else []

    def unavailable_reason(self) -> str:
        """Why it cannot run on this server now ('' when it can), e.g. a key not set."""
        return ""

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        """Yield events as they become available."""
        raise NotImplementedError

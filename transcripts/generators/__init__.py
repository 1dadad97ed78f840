"""Generators: given the path up to the fork point and parameters, produce events."""

from __future__ import annotations

from transcripts.generators.base import GenerationRequest, Generator, GeneratorError, StreamEvent
from transcripts.generators.demo import DemoGenerator
from transcripts.generators.openai_chat import OpenAIChatGenerator

EXTERNAL = "external"
GENERATORS: dict[str, type[Generator]] = {
    DemoGenerator.name: DemoGenerator,
    OpenAIChatGenerator.name: OpenAIChatGenerator,
}
CHOICES = [*GENERATORS, EXTERNAL]


def get_generator(name: str) -> Generator:
    """An instance of the generator called name."""
    try:
        return GENERATORS[name]()
    except KeyError:
        raise GeneratorError(f"unknown generator {name!r}; expected one of {CHOICES}") from None


__all__ = [
    "CHOICES",
    "EXTERNAL",
    "GENERATORS",
    "GenerationRequest",
    "Generator",
    "GeneratorError",
    "StreamEvent",
    "get_generator",
]

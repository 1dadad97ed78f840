"""Generators: given the path up to the fork point and parameters, produce events."""

from __future__ import annotations

from transcripts.errors import GeneratorError
from transcripts.generation.generators.base import GenerationRequest, Generator, StreamEvent
from transcripts.generation.generators.demo import DemoGenerator
from transcripts.generation.generators.openai_chat import OpenAIChatGenerator

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
    "StreamEvent",
    "get_generator",
]

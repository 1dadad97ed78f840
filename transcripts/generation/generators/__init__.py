"""Generators: given the path up to the fork point and parameters, produce events."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from transcripts.errors import GeneratorError
from transcripts.generation.generators.base import GenerationRequest, Generator, StreamEvent
from transcripts.generation.generators.demo import DemoGenerator
from transcripts.generation.generators.openai_chat import OpenAIChatGenerator

EXTERNAL = "external"
EXTERNAL_LABEL = "External stream layer"
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


def external_unavailable_reason() -> str:
    """Why no outside stream layer takes external runs ('' when one does): the server says
    one does with TRANSCRIPTS_EXTERNAL_WEBHOOK_URL (it is told of each run) or
    TRANSCRIPTS_EXTERNAL_GENERATOR = True (an agent polls `GET /api/v1/runs`)."""
    if getattr(settings, "TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", "") or getattr(
        settings, "TRANSCRIPTS_EXTERNAL_GENERATOR", False
    ):
        return ""
    return (
        "no stream layer takes external runs (set TRANSCRIPTS_EXTERNAL_WEBHOOK_URL, or "
        "TRANSCRIPTS_EXTERNAL_GENERATOR = True when an agent polls for queued runs)"
    )


@dataclass(frozen=True)
class Availability:
    """Whether one generator can run on this server now, its models, and why not."""

    name: str
    label: str
    models: list[str]
    reason: str  # '' when it can run

    @property
    def available(self) -> bool:
        """Whether a run for it can start now."""
        return not self.reason


def availability() -> list[Availability]:
    """Every generator (external last) with its models and why it cannot run, read from the
    settings and the environment at call time."""
    found = []
    for name, kind in GENERATORS.items():
        generator = kind()
        found.append(
            Availability(name, kind.label, generator.models(), generator.unavailable_reason())
        )
    found.append(Availability(EXTERNAL, EXTERNAL_LABEL, [""], external_unavailable_reason()))
    return found


def unavailable_reason(name: str) -> str:
    """Why the generator called name cannot run now ('' when it can); unknown names say so."""
    if name == EXTERNAL:
        return external_unavailable_reason()
    if name not in GENERATORS:
        return f"unknown generator {name!r}; expected one of {CHOICES}"
    return GENERATORS[name]().unavailable_reason()


__all__ = [
    "CHOICES",
    "EXTERNAL",
    "EXTERNAL_LABEL",
    "GENERATORS",
    "Availability",
    "GenerationRequest",
    "Generator",
    "StreamEvent",
    "availability",
    "external_unavailable_reason",
    "get_generator",
    "unavailable_reason",
]

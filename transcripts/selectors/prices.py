"""Model prices (settings.TRANSCRIPTS_PRICES): what a model's tokens cost."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class Price:
    """US dollars per 1M input and output tokens."""

    input: float
    output: float


def price_for(model: str) -> Price | None:
    """The model's price (settings.TRANSCRIPTS_PRICES): exact name, any case, then the longest
    listed prefix (a dated version); a provider prefix ("openai/gpt-4o") is ignored."""
    table: dict[str, dict[str, float]] = settings.TRANSCRIPTS_PRICES
    if not model:
        return None
    name = model.strip()
    lowered = {key.lower(): value for key, value in table.items()}
    for candidate in (name, name.rsplit("/", 1)[-1]):
        found = table.get(candidate) or lowered.get(candidate.lower())
        if found is None:
            prefixes = [key for key in lowered if candidate.lower().startswith(key + "-")]
            found = lowered[max(prefixes, key=len)] if prefixes else None
        if found is not None:
            return Price(input=found["input"], output=found["output"])
    return None

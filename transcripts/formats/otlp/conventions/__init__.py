"""The conventions an LLM-call span may follow, tried in order; the first that reads it wins.

Each module exposes `NAME` and `to_call(span) -> LlmCall | None` (None: not an LLM call of
that convention; `SpanRejected` for a span it claims but cannot read). The OTel GenAI
semconv comes first: other instrumentations increasingly write it too.
"""

from __future__ import annotations

from collections.abc import Callable

from transcripts.formats.otlp.conventions import ai_sdk, genai, openinference, openllmetry
from transcripts.formats.otlp.model import LlmCall, SpanData

CONVENTIONS: tuple[tuple[str, Callable[[SpanData], LlmCall | None]], ...] = tuple(
    (module.NAME, module.to_call) for module in (genai, ai_sdk, openllmetry, openinference)
)


def to_call(span: SpanData) -> LlmCall | None:
    """The LLM call span is, read by the first convention that claims it, or None."""
    for _name, read in CONVENTIONS:
        call = read(span)
        if call is not None:
            return call
    return None

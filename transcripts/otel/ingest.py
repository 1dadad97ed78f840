"""From decoded spans to stored threads: read each span's LLM call, fill in what its ancestors
say (agent name, conversation id), and hand the calls to the ledger's tree writer."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from transcripts import ledger
from transcripts.formats.otlp import conventions
from transcripts.formats.otlp.decode import unstorable
from transcripts.formats.otlp.model import LlmCall, SpanData, SpanRejected
from transcripts.ledger import Reach
from transcripts.models import Project

# Where an agent span names its agent: the semconv, then Pydantic AI's own attribute.
# agent.name: OpenInference names the agent on its AGENT span, the calls' ancestor.
_AGENT_NAME_KEYS = ("gen_ai.agent.name", "agent_name", "agent.name")
_CONVERSATION_KEYS = ("gen_ai.conversation.id",)
# Where a call names the provider's id of its answer (an evaluation finds its answer by it).
_RESPONSE_ID_KEYS = ("gen_ai.response.id", "ai.response.id")


@dataclass
class IngestResult:
    """What a batch of spans amounted to."""

    spans: int = 0
    calls: int = 0
    runs: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (span id, reason)

    @property
    def error_message(self) -> str:
        """The partial_success message: each rejected span and why (the first 20)."""
        shown = "; ".join(f"span {span_id}: {reason}" for span_id, reason in self.rejected[:20])
        more = len(self.rejected) - 20
        return shown + (f"; and {more} more" if more > 0 else "")


def _from_ancestors(
    span: SpanData, by_id: dict[str, SpanData], keys: tuple[str, ...]
) -> str | None:
    """The first string value of keys on span's ancestors within the batch."""
    seen: set[str] = set()
    parent = span.parent_span_id
    while parent and parent in by_id and parent not in seen:
        seen.add(parent)
        ancestor = by_id[parent]
        for key in keys:
            value = ancestor.attributes.get(key)
            if isinstance(value, str) and value:
                return value
        parent = ancestor.parent_span_id
    return None


def _first_text(span: SpanData, keys: tuple[str, ...]) -> str | None:
    """The first non-empty string value of keys on span itself."""
    for key in keys:
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def read_calls(spans: Iterable[SpanData]) -> tuple[list[LlmCall], list[tuple[str, str]], int]:
    """The LLM calls among spans, the spans refused (id, reason), and how many spans there were.

    A span holding what cannot be stored (a NUL, NaN) is refused by itself, and lends nothing
    (an agent name, a conversation id) to its descendants.
    """
    checked = [(span, unstorable(span)) for span in spans]
    by_id = {span.span_id: span for span, problem in checked if problem is None}
    calls: list[LlmCall] = []
    rejected: list[tuple[str, str]] = []
    for span, problem in checked:
        if problem is not None:
            rejected.append((span.span_id, problem))
            continue
        try:
            call = conventions.to_call(span)
        except SpanRejected as exc:
            rejected.append((span.span_id, exc.reason))
            continue
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # A convention meeting a shape it did not expect: the span is refused, not the batch.
            rejected.append((span.span_id, f"unreadable span: {exc.__class__.__name__}: {exc}"))
            continue
        if call is None:
            continue
        if call.agent_name is None:
            call.agent_name = _from_ancestors(span, by_id, _AGENT_NAME_KEYS)
        if call.conversation_id is None:
            call.conversation_id = _from_ancestors(span, by_id, _CONVERSATION_KEYS)
        if call.response_id is None:
            call.response_id = _first_text(span, _RESPONSE_ID_KEYS)
        calls.append(call)
    return calls, rejected, len(checked)


def ingest_spans(
    *, project: Project, spans: Iterable[SpanData], within: Reach | None = None
) -> IngestResult:
    """Store the LLM calls of spans into project's threads (those within reach, when given);
    refused spans are listed."""
    calls, rejected, count = read_calls(spans)
    stored = ledger.record_llm_calls(project=project, calls=calls, within=within)
    rejected.extend((call.span.span_id, reason) for call, reason in stored.rejected)
    return IngestResult(spans=count, calls=len(calls), runs=stored.runs, rejected=rejected)

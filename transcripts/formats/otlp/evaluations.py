"""The OpenTelemetry GenAI `gen_ai.evaluation.result` event: an evaluator's judgement of one
answer, as a span event on the evaluated span or as a log record (an OTLP event) emitted in
it, or naming the answer by its `gen_ai.response.id`.

https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-events/ (stability: development).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from transcripts.formats.otlp.decode import attributes_problem
from transcripts.formats.otlp.model import Attributes

EVENT = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
VALUE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"


class EvaluationRejected(Exception):
    """An evaluation event that cannot become a score; reason names the attribute."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Evaluation:
    """One evaluation result: the score it gives and where it was emitted (the evaluated
    span's ids in lowercase hex, "" when unknown)."""

    name: str
    value: float | None
    label: str
    explanation: str
    response_id: str
    trace_id: str
    span_id: str
    time_ns: int

    @property
    def external_id(self) -> str:
        """The same for the same event sent again (an exporter's retry), so its score is
        updated rather than added: a digest of where and when it was emitted and its name."""
        where = [self.trace_id, self.span_id] if self.span_id else ["response", self.response_id]
        key = json.dumps([*where, self.time_ns, self.name], separators=(",", ":"))
        return "otel:" + hashlib.sha256(key.encode()).hexdigest()


def _text(values: Attributes, key: str) -> str:
    """The string attribute key ("" when absent), or EvaluationRejected for another type."""
    value = values.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise EvaluationRejected(f"{key} must be a string")
    return value.strip()


def _score(values: Attributes) -> float | None:
    """The numeric score (a boolean counts as 1 or 0), or None when absent."""
    value = values.get(VALUE)
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise EvaluationRejected(f"{VALUE} must be a finite number")
    return float(value)


def read_evaluation(values: Attributes, *, trace_id: str, span_id: str, time_ns: int) -> Evaluation:
    """The evaluation the event's attributes hold, or EvaluationRejected naming the attribute
    that is missing or wrong (an evaluation that failed, `error.type`, gives no score)."""
    problem = attributes_problem(values, "attributes")
    if problem:
        raise EvaluationRejected(problem)
    name = _text(values, NAME)
    if not name:
        raise EvaluationRejected(f"{NAME} is required")
    error = values.get(ERROR_TYPE)
    if error is not None:
        raise EvaluationRejected(f"the evaluation {name} failed ({ERROR_TYPE} {error!s:.200})")
    value, label = _score(values), _text(values, LABEL)
    if value is None and not label:
        raise EvaluationRejected(f"{VALUE} or {LABEL} is required")
    return Evaluation(
        name=name,
        value=value,
        label=label,
        explanation=_text(values, EXPLANATION),
        response_id=_text(values, RESPONSE_ID),
        trace_id=trace_id,
        span_id=span_id,
        time_ns=time_ns,
    )

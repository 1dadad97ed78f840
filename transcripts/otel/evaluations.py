"""Evaluations sent over OpenTelemetry as scores (issue 28): each `gen_ai.evaluation.result`
event, a span event or a log record, becomes a score with source "evaluator" on the answer it
judges, written by the calling token.

What it judges: the answer produced by the span it was emitted in (the span's last assistant
message; the span's run when it produced none), else the answer whose `gen_ai.response.id`
it names; only in the caller's project and the threads the caller reaches. The same event
sent again carries the same externalId, so its score is updated, never doubled. An event that
judges nothing, or whose score its config refuses, is listed as refused and stores nothing;
the others of the batch are taken.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.db import DataError, IntegrityError

from transcripts.errors import DomainError, InvalidInput
from transcripts.formats.otlp import evaluations as semconv
from transcripts.formats.otlp.evaluations import Evaluation, EvaluationRejected, read_evaluation
from transcripts.formats.otlp.logs import LogEvent
from transcripts.formats.otlp.model import Attributes, AttributeValue, SpanData
from transcripts.ledger import Reach
from transcripts.ledger.scores import MAX_COMMENT, Author, ScoreSpec, Target, add_score
from transcripts.models import Project, ScoreConfig, ScoreDataType, ScoreSource
from transcripts.selectors.otel_scores import Judged, judged_by_response, judged_by_spans
from transcripts.selectors.scores import live_config

# The attribute of the event each field of a score comes from (named in a refusal).
_ATTRIBUTE_OF = {
    "name": semconv.NAME,
    "value": semconv.VALUE,
    "label": semconv.LABEL,
    "comment": semconv.EXPLANATION,
}
SHOWN = 20
CONVERSATION_ID = "gen_ai.conversation.id"


@dataclass
class EvaluationResult:
    """What the evaluations of a batch amounted to: scores added, scores updated (the same
    event again) and the events refused, each with where it was and why."""

    added: int = 0
    updated: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)

    @property
    def error_message(self) -> str:
        """The partial_success message: each refused event and why (the first 20)."""
        shown = "; ".join(f"{where}: {reason}" for where, reason in self.rejected[:SHOWN])
        more = len(self.rejected) - SHOWN
        return shown + (f"; and {more} more" if more > 0 else "")


# Groups of span ids to look in, in order: the first group that produced an answer wins.
_Spans = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class _Event:
    """An evaluation event as found: where it is (for a refusal), its attributes, the span and
    time it was emitted at, and the spans whose answers it may judge."""

    where: str
    attributes: Attributes
    trace_id: str
    span_id: str
    time_ns: int
    spans: _Spans
    # The threads (external ids) it is likely in: its conversation id, its trace id.
    conversations: tuple[str, ...] = ()


@dataclass
class _Batch:
    """The evaluations of one request: who writes them, into which project and threads, and
    what was looked up already (an answer is often judged on several names at once)."""

    project: Project
    author: Author
    within: Reach | None
    found: dict[tuple[str, _Spans, str], Judged | None] = field(default_factory=dict)
    configs: dict[str, ScoreConfig | None] = field(default_factory=dict)

    def _lookup(
        self, evaluation: Evaluation, spans: _Spans, conversations: tuple[str, ...]
    ) -> Judged | None:
        """The last answer of the first of spans' groups that produced one, else the answer of
        evaluation's gen_ai.response.id, else None: in conversations' threads, else (when
        given and nothing was found there) in the whole project."""
        within = self.within
        reach = {
            "visible": within is None or within.visible,
            "hidden": within is None or within.hidden,
        }
        project_id, trace_id = self.project.id, evaluation.trace_id
        for narrowed in (conversations, ()) if conversations else ((),):
            for group in spans if trace_id else ():
                found = judged_by_spans(
                    project_id, trace_id, group, conversations=narrowed, **reach
                )
                if found is not None:
                    return found
            if evaluation.response_id:
                found = judged_by_response(
                    project_id, evaluation.response_id, conversations=narrowed, **reach
                )
                if found is not None:
                    return found
        return None

    def judged(self, evaluation: Evaluation, event: _Event) -> Judged:
        """What evaluation judges, or EvaluationRejected when it matches nothing the caller
        reaches (the same words whether it does not exist or is out of reach)."""
        key = (evaluation.trace_id, event.spans, evaluation.response_id)
        if key not in self.found:
            self.found[key] = self._lookup(evaluation, event.spans, event.conversations)
        found = self.found[key]
        if found is None:
            raise EvaluationRejected(
                f"the evaluation {evaluation.name} matches no stored answer (neither the span"
                f" it was emitted in nor its {semconv.RESPONSE_ID})"
            )
        return found

    def spec(self, evaluation: Evaluation) -> ScoreSpec:
        """The score evaluation gives. An evaluator often sends a value and a label together:
        a numeric config keeps the value, a categorical one the label."""
        value, label = evaluation.value, evaluation.label
        if evaluation.name not in self.configs:
            self.configs[evaluation.name] = live_config(self.project, evaluation.name)
        config = self.configs[evaluation.name]
        if config is not None and value is not None and label:
            if config.data_type == ScoreDataType.NUMERIC:
                label = ""
            elif config.data_type == ScoreDataType.CATEGORICAL:
                value = None
        return ScoreSpec(
            name=evaluation.name,
            value=value,
            label=label,
            comment=evaluation.explanation[:MAX_COMMENT],
            source=ScoreSource.EVALUATOR,
            external_id=evaluation.external_id,
        )

    def store(self, evaluation: Evaluation, event: _Event) -> bool:
        """Write evaluation's score (whether it is new), or EvaluationRejected naming the
        attribute that is wrong."""
        judged = self.judged(evaluation, event)
        target = Target(thread=judged.thread, run=judged.run, message=judged.message)
        try:
            return _add(target, self.author, self.spec(evaluation))
        except InvalidInput as exc:
            attribute = _ATTRIBUTE_OF.get(str(exc.details.get("field", "")), "")
            raise EvaluationRejected(f"{attribute}: {exc}" if attribute else str(exc)) from None
        except DomainError as exc:
            raise EvaluationRejected(str(exc)) from None
        except DataError:
            raise EvaluationRejected("the event holds a value PostgreSQL cannot store") from None


def _add(target: Target, author: Author, spec: ScoreSpec) -> bool:
    """add_score, once more when the same event sent at the same time (two exporters' retries
    racing) added its score first: the second time updates it."""
    try:
        return add_score(target=target, author=author, spec=spec)[1]
    except IntegrityError:
        return add_score(target=target, author=author, spec=spec)[1]


def _take(
    project: Project, author: Author, within: Reach | None, events: Iterable[_Event]
) -> EvaluationResult:
    """Store the score of each event, listing those refused."""
    batch, result = _Batch(project=project, author=author, within=within), EvaluationResult()
    for event in events:
        try:
            evaluation = read_evaluation(
                event.attributes,
                trace_id=event.trace_id,
                span_id=event.span_id,
                time_ns=event.time_ns,
            )
            created = batch.store(evaluation, event)
        except EvaluationRejected as exc:
            result.rejected.append((event.where, exc.reason))
            continue
        if created:
            result.added += 1
        else:
            result.updated += 1
    return result


def _span_groups(span: SpanData, children: Mapping[str, list[str]]) -> _Spans:
    """Where to look for what the event on span judges: span with its descendants in the
    batch (an agent span's calls), then its parent (an evaluator's own span under the call)."""
    group, pending = {span.span_id: None}, list(children.get(span.span_id, ()))
    while pending:
        child = pending.pop()
        if child not in group:
            group[child] = None
            pending.extend(children.get(child, ()))
    parent = [span.parent_span_id] if span.parent_span_id else []
    return (tuple(group), tuple(parent)) if parent else (tuple(group),)


def _conversations(*candidates: AttributeValue) -> tuple[str, ...]:
    """The thread external ids among candidates (strings, first ones first, no repeats)."""
    texts = (c for c in candidates if isinstance(c, str) and c)
    return tuple(dict.fromkeys(texts))


def _span_conversations(span: SpanData, by_id: Mapping[str, SpanData]) -> tuple[str, ...]:
    """The conversation ids on span and its ancestors in the batch, then its trace id."""
    found: list[AttributeValue] = []
    seen: set[str] = set()
    current: SpanData | None = span
    while current is not None and current.span_id not in seen:
        seen.add(current.span_id)
        found.append(current.attributes.get(CONVERSATION_ID))
        current = by_id.get(current.parent_span_id or "")
    return _conversations(*found, span.trace_id)


def score_span_events(
    *, project: Project, spans: Sequence[SpanData], author: Author, within: Reach | None
) -> EvaluationResult:
    """The scores of the evaluation events on spans, each on what its span produced."""
    children: dict[str, list[str]] = defaultdict(list)
    by_id = {span.span_id: span for span in spans}
    for span in spans:
        if span.parent_span_id:
            children[span.parent_span_id].append(span.span_id)
    events = (
        _Event(
            where=f"span {span.span_id} event {index}",
            attributes=event.attributes,
            trace_id=span.trace_id,
            span_id=span.span_id,
            time_ns=event.time_ns,
            spans=_span_groups(span, children),
            conversations=_span_conversations(span, by_id),
        )
        for span in spans
        for index, event in enumerate(span.events)
        if event.name == semconv.EVENT
    )
    return _take(project, author, within, events)


def score_log_events(
    *, project: Project, records: Iterable[LogEvent], author: Author, within: Reach | None
) -> EvaluationResult:
    """The scores of the evaluation events among log records (other records are ignored),
    each on the answer of the span it was emitted in, or of its gen_ai.response.id."""
    events = (
        _Event(
            where=f"log record {record.index}",
            attributes=record.attributes,
            trace_id=record.trace_id,
            span_id=record.span_id,
            time_ns=record.time_ns,
            spans=((record.span_id,),) if record.span_id else (),
            conversations=_conversations(record.attributes.get(CONVERSATION_ID), record.trace_id),
        )
        for record in records
        if record.event_name == semconv.EVENT
    )
    return _take(project, author, within, events)

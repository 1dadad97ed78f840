"""Redaction by allow-list: the scrub rules of the event vocabulary, and what redacting a
message or a run leaves of it (ids, seqs, kinds, roles, timestamps, token counts, finish
reasons) and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import Team
from tests.factories import make_run, make_thread, user_message
from transcripts import ledger, selectors
from transcripts.errors import PermissionDenied
from transcripts.events import (
    FINISH_REASONS,
    KINDS,
    REDACTED_PARTS,
    check_event,
    scrubbed_data,
    scrubbed_error,
    scrubbed_finish_reason,
    scrubbed_metadata,
    scrubbed_usage,
)
from transcripts.ledger import moderation
from transcripts.ledger.vacuum import vacuum_after_redaction
from transcripts.models import AuditRecord, Event, Message, Run, Thread
from transcripts.projector import REDACTION_TEXT, project

SECRET = "hush-7c1e-secret"
MESSAGE_ID = "01HZX3K5Q7R8S9T0V1W2X3Y4ZA"
RUN_ID = "01HZX3K5Q7R8S9T0V1W2X3Y4Z5"
USAGE = {
    "inputTokens": 12,
    "outputTokens": 5,
    "inputTokenDetails": {"cacheReadTokens": 2, "note": SECRET},
    "providerCost": SECRET,
    "tokenizer": SECRET,
    SECRET: 3,
}
KEPT_USAGE = {"inputTokens": 12, "outputTokens": 5, "inputTokenDetails": {"cacheReadTokens": 2}}

# A rich event of every kind of the vocabulary, with content and extra fields everywhere.
EXAMPLES: dict[str, dict[str, Any]] = {
    "message-start": {
        "role": "assistant",
        "messageId": MESSAGE_ID,
        "agentId": "agent-1",
        "metadata": {"custom": SECRET, "usage": USAGE, "finishReason": "stop"},
        "extra": SECRET,
    },
    "text-delta": {"delta": SECRET, "extra": SECRET},
    "reasoning": {"text": SECRET, "signature": SECRET, "extra": SECRET},
    "tool-call": {"toolCallId": "call-1", "toolName": SECRET, "input": {"q": SECRET}},
    "tool-result": {
        "toolCallId": "call-1",
        "toolName": SECRET,
        "output": [SECRET],
        "isError": True,
        "extra": SECRET,
    },
    "file": {"mimeType": f"text/{SECRET}", "url": f"https://x.test/{SECRET}", "name": SECRET},
    "step-started": {"extra": SECRET},
    "step-finished": {"finishReason": SECRET, "usage": USAGE, "extra": SECRET},
    "error": {"message": SECRET, "code": SECRET, "detail": SECRET},
    "message": {
        "role": "user",
        "id": MESSAGE_ID,
        "createdAt": "2026-01-02T03:04:05+00:00",
        "parts": [{"type": "text", "text": SECRET}],
        "metadata": {"schemaVersion": 1, "extra": {"openai": SECRET}, "model": SECRET},
        "extra": SECRET,
    },
    "message-end": {"extra": SECRET},
}


# --- the scrub rules -------------------------------------------------------------------------


def test_every_kind_of_the_vocabulary_has_an_example_here() -> None:
    # A kind added later must show here that its scrubbed events stay valid and keep nothing.
    assert set(EXAMPLES) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_a_scrubbed_event_of_every_kind_is_still_valid_and_holds_no_content(kind: str) -> None:
    check_event({"seq": 1, "kind": kind, "data": EXAMPLES[kind]}, 0)
    scrubbed = scrubbed_data(kind, EXAMPLES[kind])
    check_event({"seq": 1, "kind": kind, "data": scrubbed}, 0)
    assert scrubbed["redacted"] is True
    assert SECRET not in str(scrubbed)
    assert "extra" not in scrubbed


def test_a_scrubbed_event_keeps_ids_roles_timestamps_token_counts_and_finish_reasons() -> None:
    assert scrubbed_data("message-start", EXAMPLES["message-start"]) == {
        "redacted": True,
        "role": "assistant",
        "messageId": MESSAGE_ID,
        "agentId": "agent-1",
        "metadata": {"usage": KEPT_USAGE, "finishReason": "stop"},
    }
    assert scrubbed_data("message", EXAMPLES["message"]) == {
        "redacted": True,
        "role": "user",
        "id": MESSAGE_ID,
        "createdAt": "2026-01-02T03:04:05+00:00",
        "metadata": {"schemaVersion": 1},
        "parts": REDACTED_PARTS,
    }
    assert scrubbed_data("tool-result", EXAMPLES["tool-result"]) == {
        "redacted": True,
        "toolCallId": "call-1",
        "output": None,
    }
    assert scrubbed_data("step-finished", {"finishReason": "tool-calls", "usage": USAGE}) == {
        "redacted": True,
        "finishReason": "tool-calls",
        "usage": KEPT_USAGE,
    }
    assert scrubbed_data("step-started", EXAMPLES["step-started"]) == {"redacted": True}
    assert scrubbed_data("message-end", EXAMPLES["message-end"]) == {"redacted": True}


@pytest.mark.parametrize("kind", ["data-secret", "system.trace", "system.ai-sdk.source-url"])
def test_open_kinds_keep_only_the_redacted_flag(kind: str) -> None:
    data = {"id": "d1", "role": "user", "usage": {"inputTokens": 1}, "payload": SECRET}
    check_event({"seq": 1, "kind": kind, "data": data}, 0)
    assert scrubbed_data(kind, data) == {"redacted": True}


def test_a_kind_without_a_schema_or_data_that_is_no_object_keeps_only_the_flag() -> None:
    assert scrubbed_data("a-kind-added-later", {"role": "user", "text": SECRET}) == {
        "redacted": True
    }
    assert scrubbed_data("data-list", [SECRET]) == {"redacted": True}
    assert scrubbed_data("text-delta", SECRET) == {"redacted": True, "delta": ""}


@pytest.mark.parametrize(
    ("usage", "kept"),
    [
        (USAGE, KEPT_USAGE),
        (  # OpenAI
            {
                "prompt_tokens": 9,
                "completion_tokens": 3,
                "total_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 1, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
            {
                "prompt_tokens": 9,
                "completion_tokens": 3,
                "total_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 1, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        ),
        (  # Anthropic
            {
                "input_tokens": 4,
                "output_tokens": 2,
                "cache_read_input_tokens": 1,
                "cache_creation": {"ephemeral_5m_input_tokens": 3},
                "service_tier": "standard",
                "server_tool_use": {"web_search_requests": 1},
            },
            {"input_tokens": 4, "output_tokens": 2, "cache_read_input_tokens": 1},
        ),
        (  # Gemini
            {
                "promptTokenCount": 5,
                "candidatesTokenCount": 6,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5}],
            },
            {"promptTokenCount": 5, "candidatesTokenCount": 6},
        ),
        ({"inputTokens": True, "outputTokens": "12", "totalTokens": None}, {}),
        ("12 tokens", {}),
    ],
)
def test_usage_keeps_numbers_under_keys_that_name_tokens(usage: Any, kept: Any) -> None:
    assert scrubbed_usage(usage) == kept


def test_a_finish_reason_outside_the_known_ones_becomes_other() -> None:
    for reason in ("stop", "tool-calls", "end_turn", "MAX_TOKENS", "tool_call"):
        assert reason in FINISH_REASONS and scrubbed_finish_reason(reason) == reason
    assert scrubbed_finish_reason(f"stopped because {SECRET}") == "other"
    assert scrubbed_finish_reason("Stop") == "other"


def test_an_error_keeps_the_marker_and_only_a_code_of_our_own() -> None:
    assert scrubbed_error({"message": SECRET, "code": "lease_expired", "detail": SECRET}) == {
        "message": REDACTION_TEXT,
        "code": "lease_expired",
    }
    assert scrubbed_error({"message": "x", "code": "GeneratorError"})["code"] == "GeneratorError"
    assert scrubbed_error({"message": "x", "code": "run_closed"})["code"] == "run_closed"
    for code in (SECRET, 500, None, {"nested": SECRET}):
        assert scrubbed_error({"message": SECRET, "code": code}) == {"message": REDACTION_TEXT}


def test_message_metadata_keeps_structure_only() -> None:
    metadata = {
        "schemaVersion": 1,
        "sourceMessageId": "msg_abc",
        "agentId": "agent-1",
        "model": SECRET,
        "extra": {"chatgpt": {"note": SECRET}},
        "finishReason": "stop",
        "usage": USAGE,
        "steps": [{"seq": 4, "finishReason": SECRET, "usage": USAGE, "note": SECRET}],
        "errors": [{"seq": 5, "message": SECRET, "code": SECRET}],
        "annotations": [{"seq": 6, "kind": "data-note", "data": {"n": SECRET}}],
        SECRET: SECRET,
    }
    assert scrubbed_metadata(metadata) == {
        "schemaVersion": 1,
        "sourceMessageId": "msg_abc",
        "agentId": "agent-1",
        "finishReason": "stop",
        "usage": KEPT_USAGE,
        "steps": [{"seq": 4, "finishReason": "other", "usage": KEPT_USAGE}],
        "errors": [{"seq": 5, "message": REDACTION_TEXT}],
        "annotations": [{"seq": 6, "kind": "data-note", "data": {"redacted": True}}],
    }


def test_scrubbed_events_project_to_the_marker_even_a_message_without_content() -> None:
    items = [
        ("message-start", EXAMPLES["message-start"]),
        ("message-end", {}),
        ("message", EXAMPLES["message"] | {"id": None}),
        *((kind, EXAMPLES[kind]) for kind in ("reasoning", "tool-call", "file")),
        ("tool-result", EXAMPLES["tool-result"]),
    ]
    events = [
        {"seq": seq, "kind": kind, "data": scrubbed_data(kind, data)}
        for seq, (kind, data) in enumerate(items, start=1)
    ]
    projection = project(events, run_id=RUN_ID)
    assert [m["role"] for m in projection.messages] == ["assistant", "user", "assistant", "tool"]
    for message in projection.messages:
        assert message["parts"] == REDACTED_PARTS
        assert message["metadata"]["redacted"] is True
    assert SECRET not in str(projection)


# --- redacting a message ---------------------------------------------------------------------


def _answer(text: str, *, trailing_step: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """An assistant message with custom metadata and usage; its step may end after it."""
    step = ("step-finished", {"finishReason": "stop", "usage": USAGE, "extra": text})
    return [
        ("message-start", {"role": "assistant", "metadata": {"custom": text}}),
        ("text-delta", {"delta": text}),
        *([] if trailing_step else [step]),
        ("message-end", {"extra": text}),
        *([step] if trailing_step else []),
    ]


def _two_answers(team: Team) -> tuple[Run, Message, Message]:
    """A committed run of two answers, the first holding SECRET, its step ending after it."""
    thread = make_thread(project=team.alpha)
    run = make_run(thread, *_answer(SECRET, trailing_step=True), *_answer("kept words"))
    first, second = run.messages.order_by("position")
    return run, first, second


@pytest.mark.django_db
def test_the_run_totals_keep_token_counts_but_the_other_message_keeps_its_keys(
    team: Team,
) -> None:
    run, secret, other = _two_answers(team)
    assert SECRET in str(Run.objects.get(pk=run.pk).usage)
    before = Message.objects.get(pk=other.pk).metadata
    moderation.redact_message(user=team.owner, message=secret, reason="pii")
    run.refresh_from_db()
    assert run.usage == {
        "inputTokens": 24,
        "outputTokens": 10,
        "inputTokenDetails": {"cacheReadTokens": 4},
    }
    secret.refresh_from_db()
    assert secret.metadata == {
        "schemaVersion": 1,
        "finishReason": "stop",
        "usage": KEPT_USAGE,
        "steps": [{"seq": 4, "finishReason": "stop", "usage": KEPT_USAGE}],
        "redacted": True,
    }
    assert Message.objects.get(pk=other.pk).metadata == before
    assert before["custom"] == "kept words" and before["usage"]["providerCost"] == SECRET
    assert SECRET not in str(list(Event.objects.filter(run=run, seq__lte=4).values("data")))
    assert "kept words" in str(list(Event.objects.filter(run=run, seq__gt=4).values("data")))


@pytest.mark.django_db
def test_the_step_that_ends_after_the_message_is_scrubbed_with_it(team: Team) -> None:
    run, secret, _ = _two_answers(team)
    moderation.redact_message(user=team.owner, message=secret, reason="pii")
    trailing = Event.objects.get(run=run, seq=4)
    assert (trailing.kind, secret.last_seq) == ("step-finished", 3)
    assert trailing.data == {"redacted": True, "finishReason": "stop", "usage": KEPT_USAGE}
    assert AuditRecord.objects.get(action="redact").details["scrubbedEvents"] == 4


@pytest.mark.django_db
def test_a_redacted_message_is_stored_as_its_scrubbed_events_project_it(team: Team) -> None:
    thread = make_thread(project=team.alpha)
    run = make_run(
        thread,
        user_message(SECRET),
        ("message-start", EXAMPLES["message-start"] | {"messageId": None}),
        ("step-started", {}),
        ("reasoning", {"text": SECRET, "signature": SECRET}),
        ("tool-call", {"toolCallId": "c1", "toolName": "vault", "input": SECRET}),
        ("data-note", {"n": SECRET}),
        ("error", {"message": SECRET, "code": "abort"}),
        ("step-finished", {"finishReason": SECRET, "usage": USAGE}),
        ("message-end", {}),
        ("tool-result", {"toolCallId": "c1", "output": SECRET}),
    )
    for message in run.messages.all():
        moderation.redact_message(user=team.owner, message=message, reason="pii")
    stored = [m.as_canonical() for m in run.messages.order_by("position")]
    projected = selectors.project_run(run.id).messages
    assert [(m["id"], m["parts"], m["metadata"]) for m in projected] == [
        (m["id"], m["parts"], m["metadata"]) for m in stored
    ]
    assert stored[1]["metadata"]["errors"] == [
        {"seq": 7, "message": REDACTION_TEXT, "code": "abort"}
    ]
    assert SECRET not in str(stored) + str(Run.objects.filter(pk=run.pk).values().get())


@pytest.mark.django_db
def test_a_title_taken_from_the_message_becomes_the_marker(team: Team) -> None:
    named = make_thread(f"{SECRET} please", project=team.alpha)
    chosen = make_thread("Chosen title", project=team.alpha)
    for thread in (named, chosen):
        ask = make_run(thread, user_message(f"{SECRET} please\nsecond line"))
        moderation.redact_message(user=team.owner, message=ask.messages.get(), reason="pii")
    assert Thread.objects.get(pk=named.pk).title == REDACTION_TEXT
    assert Thread.objects.get(pk=chosen.pk).title == "Chosen title"


@pytest.mark.django_db
def test_only_an_admin_of_the_thread_s_project_redacts(team: Team) -> None:
    alpha_run, alpha_secret, _ = _two_answers(team)
    for user in (team.moderator, team.editor, team.viewer, team.outsider, team.stranger):
        with pytest.raises(PermissionDenied):
            moderation.redact_message(user=user, message=alpha_secret, reason="pii")
    beta_thread = make_thread(project=team.beta)
    beta_secret = make_run(beta_thread, ("text-delta", {"delta": SECRET})).messages.get()
    with pytest.raises(PermissionDenied):
        moderation.redact_message(user=team.owner, message=beta_secret, reason="pii")
    moderation.redact_message(user=team.outsider, message=beta_secret, reason="pii")
    moderation.redact_message(user=team.owner, message=alpha_secret, reason="pii")
    assert SECRET not in str(list(Event.objects.filter(run=alpha_run, seq__lte=4).values("data")))


# --- redacting a run -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("error", "left"),
    [
        (
            {"message": SECRET, "code": SECRET, "detail": SECRET, "nested": {"k": [SECRET]}},
            {"message": REDACTION_TEXT},
        ),
        (
            {"message": SECRET, "code": "generator_crashed", "detail": SECRET},
            {"message": REDACTION_TEXT, "code": "generator_crashed"},
        ),
    ],
)
def test_a_redacted_run_s_error_keeps_the_marker_and_our_own_code(
    team: Team, error: dict[str, Any], left: dict[str, Any]
) -> None:
    thread = make_thread(project=team.alpha)
    run = make_run(thread, ("message-start", EXAMPLES["message-start"]), commit=False)
    ledger.fail_run(run=run, error=error)
    moderation.redact_run(user=team.owner, run=run, reason="pii")
    run.refresh_from_db()
    assert run.error == left
    assert Event.objects.get(run=run).data == scrubbed_data(
        "message-start", EXAMPLES["message-start"]
    )
    assert SECRET not in str(selectors.project_run(run.id))


# --- what a run holds outside its messages, tool answers, titles ------------------------------


def _asked_and_answered(team: Team, *after: tuple[str, dict[str, Any]]) -> tuple[Run, Message]:
    """A committed run: a question, an answer holding SECRET that calls a tool, then after."""
    thread = make_thread(project=team.alpha)
    run = make_run(
        thread,
        user_message("a question"),
        ("message-start", {"role": "assistant"}),
        ("text-delta", {"delta": SECRET}),
        ("tool-call", {"toolCallId": "c1", "toolName": "vault", "input": {}}),
        ("message-end", {}),
        *after,
    )
    return run, run.messages.get(position=1)


@pytest.mark.django_db
def test_what_the_run_holds_outside_messages_is_scrubbed_with_any_of_them(team: Team) -> None:
    run, answer = _asked_and_answered(
        team,
        ("error", {"message": SECRET, "code": "abort"}),
        ("data-note", {"n": SECRET}),
        ("system.log", {"n": SECRET}),
        ("message-start", {"role": "assistant"}),
        ("text-delta", {"delta": "kept words"}),
        ("message-end", {}),
        ("error", {"message": SECRET}),
    )
    moderation.redact_message(user=team.owner, message=answer, reason="pii")
    loose = Event.objects.filter(run=run, seq__in=[6, 7, 8, 12]).order_by("seq")
    assert [event.data for event in loose] == [
        {"redacted": True, "message": REDACTION_TEXT, "code": "abort"},
        {"redacted": True},
        {"redacted": True},
        {"redacted": True, "message": REDACTION_TEXT},
    ]
    projection = selectors.project_run(run.id)
    assert SECRET not in str((projection.errors, projection.annotations))
    assert "kept words" in str(Message.objects.get(run=run, position=2).parts)
    assert Message.objects.get(run=run, role="user").redacted_at is None


@pytest.mark.django_db
def test_the_tool_messages_answering_the_message_go_with_it_not_another_s(team: Team) -> None:
    run, answer = _asked_and_answered(
        team,
        ("tool-result", {"toolCallId": "c1", "output": SECRET}),
        ("message-start", {"role": "assistant"}),
        ("tool-call", {"toolCallId": "c2", "toolName": "vault", "input": {}}),
        ("message-end", {}),
        ("tool-result", {"toolCallId": "c2", "output": "kept words"}),
    )
    moderation.redact_message(user=team.owner, message=answer, reason="pii")
    first, second = Message.objects.filter(run=run, role="tool").order_by("position")
    assert (first.parts, first.redacted_at is not None) == (REDACTED_PARTS, True)
    assert second.redacted_at is None and "kept words" in str(second.parts)
    audit = AuditRecord.objects.get(action="redact")
    assert audit.details["toolMessages"] == [str(first.pk)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "title",
    [
        f"{SECRET} please " + "word " * 10,  # chat: collapsed, cut at 80
        f"{SECRET} please word\N{HORIZONTAL ELLIPSIS}",  # New thread: cut at a word, ellipsis
        f"{SECRET}   please",  # OpenTelemetry: whitespace collapsed
        f"{SECRET} please",  # an import: the first line
    ],
)
def test_a_title_made_from_the_text_any_way_becomes_the_marker(team: Team, title: str) -> None:
    thread = make_thread(title, project=team.alpha)
    ask = make_run(thread, user_message(f"{SECRET}  please\n" + "word " * 30 + "\nmore"))
    moderation.redact_message(user=team.owner, message=ask.messages.get(), reason="pii")
    assert Thread.objects.get(pk=thread.pk).title == REDACTION_TEXT


@pytest.mark.django_db
def test_a_title_that_is_not_the_start_of_the_text_stays(team: Team) -> None:
    for title in ("please", "Chosen title", ""):
        thread = make_thread(title, project=team.alpha)
        ask = make_run(thread, user_message(f"{SECRET} please"))
        moderation.redact_message(user=team.owner, message=ask.messages.get(), reason="pii")
        assert Thread.objects.get(pk=thread.pk).title == title


@pytest.mark.django_db
def test_inside_a_transaction_the_vacuum_waits_for_the_worker(team: Team) -> None:
    _, answer = _asked_and_answered(team)
    moderation.redact_message(user=team.owner, message=answer, reason="pii")
    assert vacuum_after_redaction() == []

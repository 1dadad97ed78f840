"""Event validation: what may be appended to a run's log (no database)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcripts import events as events_module
from transcripts.errors import InvalidEvents
from transcripts.events import check_event, check_events, to_storable_json


def problems_of(raw_events: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidEvents) as caught:
        check_events(raw_events)
    return [(p.path, p.message) for p in caught.value.problems]


def paths_of(raw_events: Any) -> list[str]:
    return [path for path, _ in problems_of(raw_events)]


def one(kind: str, data: Any = None, seq: int = 1, **envelope: Any) -> dict[str, Any]:
    event = {"seq": seq, "kind": kind, "data": {} if data is None else data}
    event.update(envelope)
    return event


def test_it_accepts_every_kind_of_the_vocabulary() -> None:
    batch = [
        one("message-start", {"role": "assistant", "messageId": "m1", "agentId": "a"}),
        one("text-delta", {"delta": "hi"}),
        one("reasoning", {"text": "hmm", "signature": "s"}),
        one("tool-call", {"toolCallId": "c", "toolName": "t", "input": {"x": [1, 2.5]}}),
        one("tool-result", {"toolCallId": "c", "toolName": "t", "output": None, "isError": True}),
        one("file", {"mimeType": "image/png", "url": "https://e.com/a.png", "name": "a"}),
        one("step-started"),
        one("step-finished", {"finishReason": "stop", "usage": {"inputTokens": 1}}),
        one("error", {"message": "x", "code": 429}),
        one("message", {"role": "user", "parts": [{"type": "text", "text": "q"}], "id": "x"}),
        one("message-end"),
        one("data-progress", [1, 2, 3]),
        one("system.notice", "any JSON value"),
    ]
    for seq, event in enumerate(batch, start=1):
        event["seq"] = seq
    checked = check_events(batch)
    assert [c.seq for c in checked] == list(range(1, 14))
    assert json.loads(checked[3].data_json) == {
        "toolCallId": "c",
        "toolName": "t",
        "input": {"x": [1, 2.5]},
    }
    assert checked[12].data == "any JSON value"


def test_an_empty_batch_is_valid() -> None:
    assert check_events([]) == []


def test_extra_data_fields_are_kept() -> None:
    [checked] = check_events([one("text-delta", {"delta": "a", "providerId": "p1"})])
    assert checked.data == {"delta": "a", "providerId": "p1"}


def test_it_refuses_an_unknown_kind_and_names_the_vocabulary() -> None:
    [(path, message)] = problems_of([one("text_delta", {"delta": "a"})])
    assert path == "events[0].kind"
    assert "unknown event kind 'text_delta'" in message
    assert "text-delta" in message


@pytest.mark.parametrize("kind", ["data-", "system.", "", "x" * 201])
def test_it_refuses_a_bare_prefix_an_empty_or_an_overlong_kind(kind: str) -> None:
    assert paths_of([one(kind)]) == ["events[0].kind"]


@pytest.mark.parametrize(
    ("kind", "data", "path"),
    [
        ("tool-result", {"toolCallId": "c", "isError": "yes"}, "events[0].data.isError"),
        ("text-delta", {"delta": 3}, "events[0].data.delta"),
        ("text-delta", {}, "events[0].data.delta"),
        ("tool-call", {"toolName": "t"}, "events[0].data.toolCallId"),
        ("tool-call", {"toolCallId": "", "toolName": "t"}, "events[0].data.toolCallId"),
        ("tool-result", {"output": 1}, "events[0].data.toolCallId"),
        ("reasoning", {"text": "x", "signature": 5}, "events[0].data.signature"),
        ("message-start", {"role": "robot"}, "events[0].data.role"),
        ("message-start", {"role": "user", "metadata": []}, "events[0].data.metadata"),
        ("file", {"mimeType": "image/png"}, "events[0].data.url"),
        ("step-finished", {"usage": 12}, "events[0].data.usage"),
        ("error", {"code": "E"}, "events[0].data.message"),
        ("error", {"message": "x", "code": True}, "events[0].data.code"),
        ("message", {"role": "user"}, "events[0].data.parts"),
        ("message", {"role": "user", "parts": "hi"}, "events[0].data.parts"),
        (
            "message",
            {"role": "user", "parts": [{"type": "text", "text": 1}]},
            "events[0].data.parts[0].text",
        ),
        (
            "message",
            {"role": "user", "parts": [{"type": "audio"}]},
            "events[0].data.parts[0].type",
        ),
        (
            "message",
            {"role": "user", "parts": [], "createdAt": "yesterday"},
            "events[0].data.createdAt",
        ),
        (
            "message",
            {"role": "user", "parts": [], "createdAt": "2026-01-01T10:00:00"},
            "events[0].data.createdAt",
        ),
        ("text-delta", "hello", "events[0].data"),
    ],
)
def test_it_refuses_wrong_payloads_strictly(kind: str, data: Any, path: str) -> None:
    paths = paths_of([one(kind, data)])
    # A union type reports one problem per alternative, each under the field's path.
    assert paths
    assert all(p == path or p.startswith(path + ".") for p in paths), paths


@pytest.mark.parametrize("seq", [0, -1, "1", 1.0, True, None])
def test_it_refuses_a_seq_that_is_not_a_positive_integer(seq: Any) -> None:
    assert problems_of([one("step-started", seq=seq)]) == [
        ("events[0].seq", "seq must be a positive integer")
    ]


def test_it_refuses_non_consecutive_seqs_within_a_batch() -> None:
    batch = [one("step-started", seq=1), one("step-started", seq=3), one("step-started", seq=4)]
    [(path, message)] = problems_of(batch)
    assert path == "events[1].seq"
    assert "expected 2, got 3" in message


def test_it_refuses_a_batch_that_goes_backwards() -> None:
    batch = [one("step-started", seq=2), one("step-started", seq=2)]
    assert paths_of(batch) == ["events[1].seq"]


def test_at_must_be_an_iso_timestamp_with_a_timezone() -> None:
    batch = [
        one("step-started", seq=1, at="2026-11-21T10:00:00"),
        one("step-started", seq=2, at="tomorrow"),
        one("step-started", seq=3, at="2026-11-21T10:00:00Z"),
    ]
    problems = problems_of(batch)
    assert problems == [
        ("events[0].at", "at must carry a timezone (e.g. Z)"),
        ("events[1].at", "at must be an ISO 8601 timestamp"),
    ]


@pytest.mark.parametrize("at", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_an_at_outside_the_years_1_to_9999_in_utc_is_refused(at: str) -> None:
    # PostgreSQL would store it (as a BC date or year 10000) and then no read could load it.
    assert problems_of([one("step-started", at=at)]) == [
        ("events[0].at", "at must fall between the years 1 and 9999 in UTC")
    ]
    [checked] = check_events([one("step-started", at="0001-01-01T00:00:00Z")])
    assert checked.at is not None and checked.at.year == 1


def test_a_message_created_outside_the_years_1_to_9999_in_utc_is_refused() -> None:
    data = {"role": "user", "parts": [], "createdAt": "0001-01-01T01:00:00+05:00"}
    [(where, message)] = problems_of([one("message", data)])
    assert where == "events[0].data.createdAt"
    assert "between the years 1 and 9999" in message


def test_a_valid_at_is_parsed() -> None:
    [checked] = check_events([one("step-started", at="2026-11-21T10:00:00+01:00")])
    assert checked.at is not None
    assert checked.at.isoformat() == "2026-11-21T10:00:00+01:00"


def test_an_event_must_be_an_object_and_a_batch_a_list() -> None:
    assert paths_of(["text-delta"]) == ["events[0]"]
    assert paths_of({"events": []}) == ["events"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"delta": "a\x00b"}, "events[0].data.delta"),
        ({"delta": "ok", "extra": {"list": ["fine", "bad\x00"]}}, "events[0].data.extra.list[1]"),
    ],
)
def test_nul_characters_in_values_are_refused_with_their_path(data: Any, path: str) -> None:
    [(where, message)] = problems_of([one("text-delta", data)])
    assert where == path
    assert "NUL" in message


def test_nul_characters_in_keys_are_refused() -> None:
    [(where, message)] = problems_of([one("data-x", {"ok": {"ke\x00y": 1}})])
    assert where.startswith("events[0].data.ok.")
    assert "NUL" in message


def test_nul_characters_in_the_kind_are_refused() -> None:
    [(where, message)] = problems_of([one("data-a\x00b", {})])
    assert where == "events[0].kind"
    assert "NUL" in message


def test_lone_surrogates_are_refused() -> None:
    [(where, message)] = problems_of([one("text-delta", {"delta": "a\ud800"})])
    assert where == "events[0].data.delta"
    assert "surrogate" in message
    assert paths_of([one("system.\udfff", {})]) == ["events[0].kind"]


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_are_refused(number: float) -> None:
    [(where, message)] = problems_of([one("data-x", {"value": [1, number]})])
    assert where == "events[0].data.value[1]"
    assert "NaN" in message


def test_an_escaped_nul_that_is_plain_text_is_accepted() -> None:
    # A literal backslash-u-0000 is six ordinary characters, not a NUL.
    [checked] = check_events([one("text-delta", {"delta": "\\u0000"})])
    assert checked.data == {"delta": "\\u0000"}


def test_every_problem_of_a_batch_is_reported_together() -> None:
    batch = [
        one("text-delta", {"delta": 3}, seq=1),
        one("tool-result", {"toolCallId": "c", "isError": "yes"}, seq=2),
        one("mystery", seq=3),
        one("text-delta", {"delta": "nul\x00"}, seq=4),
        one("step-started", seq=5, at="2026-01-01T00:00:00"),
        one("data-x", {"n": float("nan")}, seq=6),
        one("step-started", seq=8),
    ]
    assert paths_of(batch) == [
        "events[0].data.delta",
        "events[1].data.isError",
        "events[2].kind",
        "events[3].data.delta",
        "events[4].at",
        "events[5].data.n",
        "events[6].seq",
    ]


def test_the_error_message_names_the_first_problem_and_counts_the_rest() -> None:
    with pytest.raises(InvalidEvents, match=r"events\[0\]\.data\.delta: .* \(and 1 more\)"):
        check_events([one("text-delta", {"delta": 3}), one("mystery", seq=2)])


def test_check_event_returns_compact_json_ready_for_storage() -> None:
    checked = check_event(one("data-x", {"é": [1, None, True]}), 0)
    assert checked.data_json == '{"é":[1,null,true]}'


def test_to_storable_json_names_the_path_it_was_given() -> None:
    with pytest.raises(InvalidEvents) as caught:
        to_storable_json({"title": "a\x00"}, "metadata")
    assert caught.value.problems[0].path == "metadata.title"


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["text-delta", "reasoning", "data-x"]),
    text=st.text(),
    field=st.sampled_from(["delta", "text", "other"]),
    seq=st.integers(-1, 3),
    at=st.none() | st.just("2026-01-01T00:00:00Z"),
)
def test_the_shortcut_for_text_chunks_agrees_with_the_full_check(
    kind: str, text: str, field: str, seq: int, at: str | None
) -> None:
    raw = {"seq": seq, "kind": kind, "data": {field: text}, "at": at}

    def outcome() -> Any:
        try:
            return check_event(raw, 0)
        except InvalidEvents as exc:
            return exc.problems

    fast = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(events_module, "_TEXT_FIELDS", {})
        assert outcome() == fast


@pytest.mark.parametrize("kind", ["data-deep", "tool-call", "message"])
def test_data_nested_deeper_than_the_limit_is_refused(kind: str) -> None:
    deep: Any = "leaf"
    for _ in range(65):
        deep = {"x": deep}
    data: dict[str, Any] = {
        "data-deep": {"v": deep},
        "tool-call": {"toolCallId": "c", "toolName": "t", "input": deep},
        "message": {"role": "user", "parts": [{"type": "text", "text": "a", "extra": deep}]},
    }[kind]
    [(path, message)] = problems_of([one(kind, data)])
    assert path == "events[0].data" and "deeper than 64 levels" in message
    shallow: Any = "leaf"
    for _ in range(40):
        shallow = {"x": shallow}
    assert check_events([one("data-ok", {"v": shallow})])

"""The streamed canonical export writes PostgreSQL's text of each stored value (jsonb's text,
times by to_char) instead of reading it into Python and encoding it again (issue 30): these
tests prove the two give the same bytes, value by value (generated JSON, odd numbers, every
time) and for whole threads (branches, tool calls, unicode, numbers with fractions, failed
runs, a leaf, events, batches of two) against `export_thread`, which still reads whole."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import make_thread
from transcripts import interchange
from transcripts.ids import to_uuid
from transcripts.interchange import export_stream
from transcripts.interchange.export import postgres_moment
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Run, Thread
from transcripts.selectors import exports
from transcripts.times import to_iso

pytestmark = pytest.mark.django_db

SOURCE = Path(__file__).resolve().parent / "golden_exports" / "source-branches.json"


def _through_postgres(jsonb_literal: str) -> tuple[str, bool]:
    """jsonb's text of a value and whether it holds a number, as the export's query reads
    them."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {exports._json('v')} FROM (SELECT %s::jsonb AS v) AS t", [jsonb_literal]
        )
        text, numbers = cursor.fetchone()
    return text, numbers


def _as_python_wrote_it(text: str) -> str:
    """What the export wrote when it read values into Python (Django's JSONField: json.loads)."""
    return json.dumps(json.loads(text), ensure_ascii=False)


# Strings as the app can store them: jsonb refuses NUL and lone surrogates.
_STRINGS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_STRINGS, inner, max_size=4),
    max_leaves=12,
)


def _typed(value: Any) -> Any:
    """value with each number's type beside it (1 and 1.0 are equal in Python, not in JSON)."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, repr(value))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON)
def test_jsonb_text_is_written_as_python_wrote_the_value(value: Any) -> None:
    text, numbers = _through_postgres(json.dumps(value))
    assert export_stream._json(text, numbers) == _as_python_wrote_it(text)


@pytest.mark.parametrize(
    "literal",
    [
        '{"a": 1.10, "b": 2.00, "c": 2.0, "d": -0.0}',
        "[0.0000001, 1e-7, 1.5e-300, 1e22, 10000000000000000000000.0, 123456789012345678901234]",
        '{"nested": {"deep": [{"x": 0.1}]}, "text": "costs 1.5, or 2. later: 3.25"}',
        '{"text": "version 1.5 [2.5, 3.5] key: 4.5", "n": 7}',
        '"\\u0001\\u001f\\u007f\\u2028 \\"quoted\\" back\\\\slash /é 漢字 🎉"',
        "3.10",
        "-12",
        "null",
        "[]",
        "{}",
        "[9223372036854775807, 9223372036854775808, 18446744073709551616, -9223372036854775809]",
        "[1e400, -1e400, 1e-400, 100000000000000000000]",
        '{"d": -0.0, "e": 0.1, "f": 5e-324, "g": 1.7976931348623157e308}',
        '{"text": "phone 0123456789012345678901 is text", "n": 12}',
    ],
)
def test_odd_numbers_and_strings_are_written_and_read_as_python_did(literal: str) -> None:
    text, numbers = _through_postgres(literal)
    assert export_stream._json(text, numbers) == _as_python_wrote_it(text)
    # The ThreadProtocol export reads parts and metadata with orjson: to the same values.
    assert _typed(export_stream._loads(text)) == _typed(json.loads(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON)
def test_the_fast_reader_reads_jsonb_text_as_json_loads_does(value: Any) -> None:
    # The ThreadProtocol export reads each message's parts and metadata with orjson.
    text, _ = _through_postgres(json.dumps(value))
    assert _typed(export_stream._loads(text)) == _typed(json.loads(text))


def _times_through_postgres(moment: datetime) -> tuple[str, str, str]:
    """(the export's SQL text of moment as a message's and a run's time, PostgreSQL's plain
    text of it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {exports._iso('t', zone='+00:00')}, {exports._iso('t', zone='Z')}, t::text "
            "FROM (SELECT %s::timestamptz AS t) AS m",
            [moment],
        )
        return cursor.fetchone()


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    )
    | st.datetimes(timezones=st.just(UTC)).map(lambda moment: moment.replace(microsecond=0))
)
def test_times_are_written_as_python_wrote_them(moment: datetime) -> None:
    if not datetime(1, 1, 2, tzinfo=UTC) <= moment <= datetime(9999, 12, 30, tzinfo=UTC):
        return
    message_time, run_time, plain = _times_through_postgres(moment)
    assert message_time == postgres_moment(plain).isoformat()
    assert run_time == to_iso(postgres_moment(plain))


def _odd_thread() -> Thread:
    """The golden branches thread with numbers, strings and times that text and Python could
    write differently, in messages and runs alike."""
    document = json.loads(SOURCE.read_text())
    document = copy.deepcopy(document)
    document["thread"]["id"] = None
    for message in document["messages"]:
        message["metadata"]["score"] = 0.1
        message["metadata"]["note"] = "1.5, 2. ok: 3.25 — ünïcödé 🎉 \u2028"
    document["messages"][1]["parts"].append(
        {
            "type": "tool-call",
            "toolCallId": "call_1",
            "toolName": "weigh",
            "input": {"grams": 1.25, "tiny": 1e-07, "huge": 1e22, "list": [0.5, 2, "3.5"]},
        }
    )
    for run in document["runs"]:
        run["parameters"] = {"temperature": 0.7, "topP": 1e-07, "maxTokens": 200}
        run["usage"] = {"inputTokens": 12, "cost": 0.00123}
        run["metadata"] = {"note": 'tab\there, quote " and é'}
    [thread_id] = interchange.import_data(document, project=default_project()).thread_ids
    # Values only raw SQL could have stored, and times at the edges of the format.
    first = Message.objects.filter(thread_id=thread_id).order_by("depth", "id")[0]
    run = Run.objects.filter(thread_id=thread_id).order_by("created_at", "id")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Message._meta.db_table} SET metadata = "
            """'{"schemaVersion": 1, "a": 1.10, "b": 2.00, "c": 0.0000001}'::jsonb, """
            "created_at = '0005-03-04 05:06:07+00' WHERE id = %s",
            [to_uuid(first.pk)],
        )
        cursor.execute(
            f"UPDATE {Run._meta.db_table} SET usage = '{{\"cost\": 10.500}}'::jsonb, "
            """error = '{"message": "boom", "retryAfter": 1.50}'::jsonb, status = 'failed', """
            "finished_at = '2025-03-01 10:00:00.000001+00' WHERE id = %s",
            [to_uuid(run.pk)],
        )
    return Thread.objects.get(pk=thread_id)


def _streamed(thread: Thread, **options: Any) -> bytes:
    exported = interchange.stream_thread(thread, "canonical", **options)
    return b"".join(interchange.chunked(exported.pieces))


@pytest.mark.parametrize("batches", ["default", "two"])
@pytest.mark.parametrize(
    "options",
    [{}, {"with_events": True}, {"leaf": "01HZZ010000000000000000004"}],
    ids=["plain", "events", "leaf"],
)
def test_a_streamed_canonical_export_writes_the_whole_exports_bytes(
    batches: str, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    if batches == "two":
        monkeypatch.setattr(export_stream, "MESSAGE_BATCH", 2)
        monkeypatch.setattr(export_stream, "RUN_BATCH", 2)
        monkeypatch.setattr(export_stream, "CHUNK_BYTES", 50)
    thread = _odd_thread()
    streamed = _streamed(thread, **options)
    whole = interchange.export_thread(thread, "canonical", **options).content.encode()
    assert streamed == whole
    document = json.loads(streamed)
    assert len(document["messages"]) == 9
    assert document["messages"][0]["metadata"]["a"] == 1.1
    assert document["messages"][0]["createdAt"] == "0005-03-04T05:06:07+00:00"
    assert any(run["error"] == {"message": "boom", "retryAfter": 1.5} for run in document["runs"])
    assert ("events" in document["runs"][0]) == bool(options.get("with_events"))


def test_an_empty_thread_streams_as_it_exports() -> None:
    thread = make_thread("nothing yet")
    assert _streamed(thread) == interchange.export_thread(thread, "canonical").content.encode()

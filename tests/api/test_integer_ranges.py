"""Every integer the API accepts is range-checked: out of its range (its column's, or the
endpoint's) it is a 422 naming the field, never a 500 and never a write.

Each field is tried with -1 and 0 where they are invalid, 2^31 (past PostgreSQL's integer),
2^63 (past bigint) and 1e309 (past a double: JSON's infinity).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.factories import conversation, make_run, make_thread
from transcripts import ledger
from transcripts.errors import InvalidInput
from transcripts.ledger.default_project import default_project
from transcripts.models import Event, Run
from transcripts.pagination import encode_cursor

pytestmark = pytest.mark.django_db

HUGE = ("2147483648", "9223372036854775808", "1e309")
NEGATIVE = ("-1",)
ZERO = ("0",)
# Stands for the number in a body template, replaced by its JSON text (1e309 has no float).
X = "__NUMBER__"


@dataclass(frozen=True)
class Field:
    """An integer the API reads: where (a path made from a run id, a query parameter or a
    body with X where the number goes), what the 422 names, and the values out of range."""

    name: str
    method: str
    path: str
    field: str
    values: tuple[str, ...]
    query: str | None = None
    body: Any = None


_DELTA = {"kind": "text-delta", "data": {"delta": "x"}}
_MESSAGE = {"kind": "message", "data": {"role": "user", "parts": [{"type": "text", "text": "x"}]}}
FIELDS = [
    Field(
        "seq (one-statement append)",
        "POST",
        "/runs/{run}/events",
        "events[0].seq",
        NEGATIVE + ZERO + HUGE,
        body={"events": [{"seq": X, **_DELTA}]},
    ),
    Field(
        "seq (full append)",
        "POST",
        "/runs/{run}/events",
        "events[0].seq",
        NEGATIVE + ZERO + HUGE,
        body={"events": [{"seq": X, **_MESSAGE}]},
    ),
    Field("afterSeq", "GET", "/runs/{run}/events", "afterSeq", NEGATIVE + HUGE, query="afterSeq"),
    Field("limit", "GET", "/runs/{run}/events", "limit", NEGATIVE + ZERO + HUGE, query="limit"),
    Field(
        "ai-sdk afterSeq",
        "POST",
        "/runs/{run}/ai-sdk",
        "afterSeq",
        NEGATIVE + HUGE,
        query="afterSeq",
        body=[{"type": "text-delta", "id": "t", "delta": "x"}],
    ),
    Field("runs limit", "GET", "/runs", "limit", NEGATIVE + ZERO + HUGE, query="limit"),
    Field(
        "leaseSeconds",
        "POST",
        "/runs/{run}/claim",
        "leaseSeconds",
        NEGATIVE + ZERO + HUGE,
        body={"worker": "w", "leaseSeconds": X},
    ),
    Field("threads limit", "GET", "/threads", "limit", NEGATIVE + ZERO + HUGE, query="limit"),
    Field(
        "messages limit",
        "GET",
        "/threads/{thread}/messages",
        "limit",
        NEGATIVE + ZERO + HUGE,
        query="limit",
    ),
    Field(
        "chat maxTokens",
        "POST",
        "/chat",
        "parameters.maxTokens",
        NEGATIVE + ZERO + HUGE,
        body={"id": "c", "message": {"role": "user", "parts": []}, "parameters": {"maxTokens": X}},
    ),
    Field(
        "chat delayMs",
        "POST",
        "/chat",
        "parameters.delayMs",
        NEGATIVE + HUGE,
        body={"id": "c", "message": {"role": "user", "parts": []}, "parameters": {"delayMs": X}},
    ),
    Field(
        "chat temperature",
        "POST",
        "/chat",
        "parameters.temperature",
        NEGATIVE + HUGE,
        body={
            "id": "c",
            "message": {"role": "user", "parts": []},
            "parameters": {"temperature": X},
        },
    ),
    Field(
        "stream afterSeq",
        "GET",
        "/runs/{run}/stream",
        "afterSeq",
        (*NEGATIVE, *HUGE, "\u00b2"),  # a digit to str.isdigit, not to int()
        "afterSeq",
    ),
]
CASES = [
    pytest.param(field, value, id=f"{field.name}={value}")
    for field in FIELDS
    for value in field.values
]


def _send(api: ApiClient, field: Field, value: str, ids: dict[str, str]) -> Any:
    path = field.path.format(**ids)
    if field.query is not None:
        path += f"?{field.query}={value}"
    if field.method == "GET":
        return api.client.get("/api/v1" + path, headers=api.headers)
    body = json.dumps(field.body if field.body is not None else {}).replace(f'"{X}"', value)
    return api.post_raw(path, body, "application/json")


@pytest.fixture
def ids() -> dict[str, str]:
    """A thread with a message, and an open run of it."""
    thread = conversation(turns=1)
    run = make_run(thread, commit=False)
    return {"run": run.id, "thread": thread.id}


@pytest.mark.parametrize(("field", "value"), CASES)
def test_an_integer_out_of_range_is_a_422_naming_the_field(
    api: ApiClient, ids: dict[str, str], field: Field, value: str
) -> None:
    events_before = Event.objects.count()
    response = _send(api, field, value, ids)
    assert response.status_code == 422, response.content
    error = error_of(response)
    assert error["code"] == "invalid"
    assert field.field in error["message"], error
    assert Event.objects.count() == events_before


def _append(run: Run, seq: int) -> None:
    """A run whose lastSeq is seq (as if its events were stored)."""
    Run.objects.filter(pk=run.pk).update(last_seq=seq)


@pytest.mark.parametrize("kind", [_DELTA, _MESSAGE], ids=["one-statement", "full"])
def test_a_seq_past_the_column_after_the_last_one_is_a_422(
    api: ApiClient, kind: dict[str, Any]
) -> None:
    thread = make_thread(project=default_project())
    run = make_run(thread, commit=False)
    _append(run, 2**31 - 1)
    body = {"events": [{"seq": 2**31, **kind}]}
    response = api.post(f"/runs/{run.id}/events", body)
    assert response.status_code == 422, response.content
    assert "events[0].seq" in error_of(response)["message"]


def test_the_ai_sdk_numbering_past_the_column_is_a_422(api: ApiClient) -> None:
    thread = make_thread(project=default_project())
    run = make_run(thread, commit=False)
    _append(run, 2**31 - 1)
    chunks = [{"type": "text-delta", "id": "t", "delta": "x"}]
    response = api.post(f"/runs/{run.id}/ai-sdk?afterSeq={2**31 - 1}", chunks)
    assert response.status_code == 422, response.content
    assert "seq" in error_of(response)["message"]
    assert not Event.objects.filter(run=run).exists()


def test_numbers_in_json_objects_past_a_double_are_refused(api: ApiClient) -> None:
    body = '{"title": "t", "metadata": {"n": 1e309}}'
    response = api.post_raw("/threads", body, "application/json")
    assert response.status_code == 422, response.content
    assert "metadata" in str(error_of(response)), response.content


@pytest.mark.parametrize("depth", [-2, 2**31, 2**63, 1e309, True])
def test_a_path_cursor_holding_a_depth_out_of_range_is_a_422(
    api: ApiClient, ids: dict[str, str], depth: object
) -> None:
    cursor = encode_cursor(depth)
    response = api.get(f"/threads/{ids['thread']}/messages", cursor=cursor)
    assert response.status_code == 422, response.content
    assert error_of(response)["details"] == {"field": "cursor"}


@pytest.mark.parametrize("seq", [2**31, 2**63])
def test_the_ledger_refuses_a_seq_past_the_column_on_both_paths(seq: int) -> None:
    run = make_run(make_thread(), commit=False)
    _append(run, seq - 1 if seq < 2**63 else 0)
    batch = [{"seq": seq, **_DELTA}]
    reach = ledger.Reach(project_id=default_project().pk, visible=True, hidden=False)
    assert ledger.append_at_once(run=run.id, events=batch, within=reach) is None
    with pytest.raises(InvalidInput) as caught:
        ledger.append_events(run=run.id, events=batch)
    assert caught.value.details["field"] == "events[0].seq"
    assert not Event.objects.filter(run=run).exists()

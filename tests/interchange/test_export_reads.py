"""How an export reads a thread: a fixed number of queries, no snapshots, ids spelled exactly."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from tests.factories import conversation, make_run
from transcripts import interchange
from transcripts.ids import ulid_from_uuid
from transcripts.interchange import export
from transcripts.ledger.default_project import default_project
from transcripts.message_schema import SCHEMA_VERSION
from transcripts.models import Event, Message, Run, Thread
from transcripts.times import to_iso


def _queries(thread: Thread) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        interchange.export_thread(thread, "canonical", with_events=True)
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.django_db
def test_an_export_with_events_reads_as_many_queries_for_two_runs_as_for_twelve() -> None:
    small = conversation(turns=1, title="Two runs")
    big = conversation(turns=6, title="Twelve runs")
    assert len(_queries(small)) == len(_queries(big))


@pytest.mark.django_db
def test_an_export_does_not_read_run_snapshots() -> None:
    thread = conversation(turns=2)
    # Open runs keep a snapshot of their projection, which can be as big as the run.
    assert not any("snapshot" in sql for sql in _queries(thread))


@pytest.mark.django_db
def test_events_stay_with_their_run_in_order_when_read_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread = conversation(turns=2)
    make_run(thread, *[("text-delta", {"delta": f"{n} "}) for n in range(5)])
    monkeypatch.setattr(export, "EVENT_BATCH", 2)
    document = json.loads(interchange.export_thread(thread, "canonical", with_events=True).content)
    runs = Run.objects.filter(thread=thread).order_by("created_at", "id")
    assert len(document["runs"]) == runs.count() == 5
    for item, run in zip(document["runs"], runs, strict=True):
        assert item["id"] == run.id
        expected = [e.as_dict() for e in Event.objects.filter(run_id=run.id).order_by("seq")]
        assert item["events"] == json.loads(json.dumps(expected)) and expected


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_a_uuid_reads_as_the_ulid_the_ulid_package_spells(bits: int) -> None:
    value = uuid.UUID(int=bits)
    assert ulid_from_uuid(value) == str(ULID.from_uuid(value))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("stored", "written"),
    [
        ("2025-03-01T10:00:00Z", "2025-03-01T10:00:00+00:00"),
        ("2025-03-01T10:00:00.5Z", "2025-03-01T10:00:00.500000+00:00"),
        ("2025-03-01T12:00:00.000123+02:00", "2025-03-01T10:00:00.000123+00:00"),
    ],
)
def test_message_times_are_written_as_the_model_spells_them(stored: str, written: str) -> None:
    document = {
        "format": "transcripts.message_schema",
        "version": 1,
        "thread": {"title": "Times"},
        "messages": [
            {
                "id": str(ULID()),
                "parentMessageId": None,
                "role": "user",
                "createdAt": stored,
                "metadata": {"schemaVersion": SCHEMA_VERSION},
                "parts": [{"type": "text", "text": "When?"}],
            }
        ],
    }
    result = interchange.import_data(document, project=default_project())
    thread = Thread.objects.get(pk=result.thread_ids[0])
    exported = json.loads(interchange.export_thread(thread, "canonical").content)
    message = Message.objects.get(thread=thread)
    assert exported["messages"] == [message.as_canonical()]
    assert exported["messages"][0]["createdAt"] == written
    run = Run.objects.get(thread=thread)
    assert exported["runs"][0]["createdAt"] == to_iso(run.created_at)
    assert exported["runs"][0]["finishedAt"] == to_iso(run.finished_at)

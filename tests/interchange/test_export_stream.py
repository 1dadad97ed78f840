"""Exports that write as they read (issue 30): refusals still come before the first byte,
the header goes out before a message is read, and a database failure after the first byte
breaks the download instead of ending it as if it were whole. (The bytes themselves are
pinned by test_export_golden.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import OperationalError, connection, connections

from tests.api.conftest import ApiClient
from tests.factories import conversation, say
from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import Message, Thread


def _reader() -> ApiClient:
    _, raw = issue_token(project=default_project(), name="stream", scopes=("read",))
    return ApiClient(raw)


def _export(thread: Thread, **params: str) -> Any:
    return _reader().get(f"/threads/{thread.id}/export", **params)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"format": "docx"}, 422),
        ({"format": "canonical", "branches": "all"}, 422),
        ({"format": "threadprotocol", "branches": "some"}, 422),
        ({"format": "canonical", "leaf": "not-an-id"}, 404),
        ({"format": "canonical", "leaf": "0" * 26}, 404),
        ({"format": "threadprotocol", "leaf": "0" * 26}, 404),
        ({"format": "threadprotocol", "branches": "all", "leaf": "0" * 26}, 404),
        ({"format": "openai", "leaf": "0" * 26}, 404),
    ],
)
def test_a_refused_export_answers_its_error_before_any_byte(
    params: dict[str, str], status: int
) -> None:
    thread = conversation(turns=1)
    response = _export(thread, **params)
    assert response.status_code == status
    assert not response.streaming
    assert "code" in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize("spelling", ["lower", "other thread"])
def test_a_leaf_is_a_message_of_this_thread_spelled_as_exports_spell_it(spelling: str) -> None:
    thread = conversation(turns=1)
    other = conversation(turns=1)
    mine = Message.objects.filter(thread=thread).first()
    theirs = Message.objects.filter(thread=other).first()
    assert mine is not None and theirs is not None
    leaf = mine.id.lower() if spelling == "lower" else theirs.id
    assert _export(thread, format="canonical", leaf=leaf).status_code == 404
    assert _export(thread, format="canonical", leaf=mine.id).status_code == 200


@pytest.mark.django_db
def test_the_canonical_header_is_sent_before_the_messages_are_read() -> None:
    thread = conversation(turns=2)
    response = _export(thread, format="canonical")
    chunks = iter(response.streaming_content)
    first = next(chunks)
    assert first.startswith(b'{"format": "transcripts.message_schema"')
    assert first.endswith(b'"messages": [')
    document = json.loads(first + b"".join(chunks))
    assert len(document["messages"]) == 4


@pytest.mark.django_db(transaction=True)
def test_a_database_failure_mid_export_cuts_the_download_short() -> None:
    thread = conversation(turns=2)
    say(thread, "more")
    response = _export(thread, format="canonical")
    assert response.status_code == 200
    chunks = iter(response.streaming_content)
    received = next(chunks)  # the header: the 200 is on its way
    # Another session locks the messages: the export's next read fails (a real error of the
    # database, as when it goes away), after the first byte.
    other = connections.create_connection("default")
    other.ensure_connection()
    other.set_autocommit(False)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '100ms'")
    try:
        with other.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")
            cursor.execute(f"LOCK TABLE {Message._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(OperationalError, match="lock timeout"):
            for chunk in chunks:
                received += chunk
    finally:
        other.rollback()
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    # What arrived is no document: a reader cannot take it for the whole export.
    with pytest.raises(json.JSONDecodeError):
        json.loads(received)

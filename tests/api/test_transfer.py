"""Import and export over the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.factories import conversation
from transcripts.models import ImportJob, Message, Thread

pytestmark = pytest.mark.django_db
FORMATS_FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"


def test_it_exports_a_thread_as_a_download(reader: ApiClient):
    thread = conversation(turns=1)
    response = reader.get(f"/threads/{thread.id}/export", format="canonical")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="thread-{thread.id}.json"'
    document = json.loads(b"".join(response.streaming_content))
    assert document["thread"]["id"] == thread.id
    assert len(document["messages"]) == 2


def test_export_refuses_unknown_formats_and_leaves(reader: ApiClient):
    thread = conversation(turns=1)
    assert error_of(reader.get(f"/threads/{thread.id}/export", format="docx"))["code"] == "invalid"
    response = reader.get(f"/threads/{thread.id}/export", format="openai", leaf="0" * 26)
    assert response.status_code == 404


def test_an_outsider_cannot_export_or_import():
    thread = conversation(turns=1)
    outsider = ApiClient(None)
    assert outsider.get(f"/threads/{thread.id}/export").status_code == 401
    assert outsider.post_raw("/imports", b"[]", "application/json").status_code == 401


def test_a_hidden_thread_cannot_be_exported(reader: ApiClient):
    thread = conversation(turns=1)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    assert reader.get(f"/threads/{thread.id}/export").status_code == 404


def test_a_small_import_creates_threads_at_once(api: ApiClient):
    raw = (FORMATS_FIXTURES / "openai_chat.json").read_bytes()
    response = api.post_raw("/imports?format=openai", raw, "application/json")
    assert response.status_code == 201, response.content
    [thread_id] = response.json()["threadIds"]
    assert Message.objects.filter(thread_id=thread_id).exists()


def test_an_import_needs_the_ingest_scope(reader: ApiClient):
    raw = (FORMATS_FIXTURES / "openai_chat.json").read_bytes()
    assert reader.post_raw("/imports?format=openai", raw, "application/json").status_code == 403


def test_a_bad_import_is_a_422_and_imports_nothing(api: ApiClient):
    before = Thread.objects.count()
    response = api.post_raw("/imports?format=canonical", b'{"format": 1}', "application/json")
    error = error_of(response)
    assert response.status_code == 422 and error["details"]["problems"]
    assert error_of(api.post_raw("/imports", b"{oops", "application/json"))["code"] == "invalid"
    assert Thread.objects.count() == before


def test_a_large_import_becomes_a_job_the_client_polls(api: ApiClient, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 10
    raw = (FORMATS_FIXTURES / "chatgpt_conversations.json").read_bytes()
    jobs = ImportJob.objects.count()  # a row another test committed is not this request's
    response = api.post_raw("/imports", raw, "application/json", HTTP_X_FILENAME="c.json")
    assert response.status_code == 202
    job = response.json()
    assert job["status"] == "queued" and job["size"] == len(raw) and job["filename"] == "c.json"
    from transcripts.interchange import run_import_job

    run_import_job(job["id"])
    polled = api.get(f"/imports/{job['id']}").json()
    assert polled["status"] == "done" and polled["progress"] == 1.0
    assert len(polled["threadIds"]) == len(json.loads(raw))
    assert api.get("/imports/nope").status_code == 404
    assert ImportJob.objects.count() == jobs + 1


def test_an_import_over_the_limit_is_a_413(api: ApiClient, settings):
    settings.TRANSCRIPTS_MAX_IMPORT_BYTES = 10
    response = api.post_raw("/imports", b"[" + b" " * 20 + b"]", "application/json")
    assert response.status_code == 413 and error_of(response)["code"]


def test_an_import_nested_too_deeply_is_a_422_and_imports_nothing(api: ApiClient):
    thread = conversation(turns=1)
    document = json.loads(
        b"".join(api.get(f"/threads/{thread.id}/export", format="canonical").streaming_content)
    )
    threads = Thread.objects.count()
    for depth in (70, 800):
        deep: object = "bottom"
        for _ in range(depth):
            deep = [deep]
        document["messages"][0]["metadata"]["deep"] = deep
        document["thread"]["id"] = None
        raw = json.dumps(document).encode()

        response = api.post_raw("/imports?format=canonical", raw, "application/json")

        assert response.status_code == 422, (depth, response.content)
        assert error_of(response)["code"] == "invalid"
    assert Thread.objects.count() == threads


def _chatgpt_export(words: str) -> bytes:
    """A ChatGPT export of one conversation whose answer says words."""

    def node(key: str, parent: str | None, role: str, text: str) -> dict[str, object]:
        return {
            "id": key,
            "parent": parent,
            "children": [],
            "message": {
                "id": key,
                "author": {"role": role},
                "create_time": 1_700_000_000.0,
                "content": {"content_type": "text", "parts": [text]},
                "metadata": {},
            },
        }

    mapping = {
        "q1": node("q1", None, "user", "where do they live?"),
        "a1": node("a1", "q1", "assistant", words),
    }
    mapping["q1"]["children"] = ["a1"]
    return json.dumps(
        [{"id": "c1", "title": "Birds", "current_node": "a1", "mapping": mapping}]
    ).encode()


def test_a_just_imported_message_is_found_by_search(api: ApiClient):
    """The search vector is written with the message, in the import's transaction: a search
    right after the import returns finds it (issue 30)."""
    raw = _chatgpt_export("the flamingos nest on salt flats")
    response = api.post_raw("/imports?format=chatgpt", raw, "application/json")
    assert response.status_code == 201, response.content
    [thread_id] = response.json()["threadIds"]
    found = api.get("/threads", q="flamingos").json()["threads"]
    assert [t["id"] for t in found] == [thread_id]
    assert api.get("/threads", q="pelicans").json()["threads"] == []


def test_a_message_imported_by_a_job_is_found_by_search(api: ApiClient, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 10
    raw = _chatgpt_export("the albatross glides for hours")
    job = api.post_raw("/imports", raw, "application/json", HTTP_X_FILENAME="c.json").json()
    from transcripts.interchange import run_import_job

    run_import_job(job["id"])
    [thread_id] = api.get(f"/imports/{job['id']}").json()["threadIds"]
    found = api.get("/threads", q="albatross").json()["threads"]
    assert [t["id"] for t in found] == [thread_id]

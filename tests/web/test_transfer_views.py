"""The import page and the export menu."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.factories import conversation
from transcripts.ledger.default_project import default_project
from transcripts.models import ImportJob, Thread

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
HTMX = {"HX-Request": "true"}


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/json")


def test_the_import_page_needs_a_login(outsider: Client) -> None:
    assert outsider.get("/import/").status_code == 302


def test_a_small_file_is_imported_at_once_and_listed(editor_client: Client) -> None:
    raw = (FIXTURES / "anthropic_messages.json").read_bytes()
    page = editor_client.get("/import/")
    assert b"Detect automatically" in page.content
    response = editor_client.post("/import/", {"file": _upload("a.json", raw), "format": ""})
    assert response.status_code == 201
    thread = Thread.objects.get()
    assert f'href="/t/{thread.id}/"'.encode() in response.content


def test_a_bad_file_imports_nothing_and_says_why(editor_client: Client) -> None:
    response = editor_client.post(
        "/import/",
        {"file": _upload("x.json", b'{"format": 3}'), "format": "canonical"},
        headers=HTMX,
    )
    assert response.status_code == 422
    assert b"Nothing was imported" in response.content and b"$.format" in response.content
    assert editor_client.post("/import/", {"format": ""}).status_code == 422
    assert not Thread.objects.exists()


def test_a_large_file_shows_a_progress_bar_until_the_worker_is_done(
    editor_client: Client, settings, tmp_path
) -> None:
    settings.MEDIA_ROOT = tmp_path
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 10
    raw = (FIXTURES / "chatgpt_conversations.json").read_bytes()
    response = editor_client.post("/import/", {"file": _upload("c.json", raw)}, headers=HTMX)
    assert response.status_code == 202
    job = ImportJob.objects.get()
    assert b"<progress" in response.content and b'hx-trigger="every 1s"' in response.content
    from transcripts.interchange import run_import_job

    run_import_job(job.id)
    polled = editor_client.get(f"/import/{job.id}/", headers=HTMX)
    assert b"every 1s" not in polled.content and b"Imported" in polled.content
    assert editor_client.get(f"/import/{job.id}/").status_code == 200


def test_someone_else_s_import_is_not_found(
    viewer_client: Client, moderator_client: Client
) -> None:
    job = ImportJob.objects.create(filename="x", size=1, project=default_project())
    assert viewer_client.get(f"/import/{job.id}/").status_code == 404
    assert moderator_client.get("/import/nope/").status_code == 404


def test_the_conversation_offers_every_export_format(viewer_client: Client) -> None:
    thread = conversation(turns=1)
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    for key in ("canonical", "openai", "anthropic", "gemini", "markdown", "threadprotocol"):
        assert f"/api/v1/threads/{thread.id}/export?format={key}" in html
    download = viewer_client.get(f"/api/v1/threads/{thread.id}/export?format=markdown")
    assert download.status_code == 200
    assert b"question 0" in download.getvalue()


def test_a_big_result_lists_the_first_threads_and_counts_the_rest(editor_client: Client) -> None:
    from transcripts.web.views.imports import LISTED

    one = json.loads((FIXTURES / "chatgpt_conversations.json").read_text())[0]
    many = [dict(one, title=f"copy {n}") for n in range(LISTED + 3)]
    upload = SimpleUploadedFile("c.json", json.dumps(many).encode(), "application/json")
    response = editor_client.post("/import/", {"file": upload})
    assert response.status_code == 201
    assert response.content.count(b'href="/t/') == LISTED
    assert b"and 3 more" in response.content

"""The import report: returned by the API, stored on jobs, shown on the import page."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from tests.base import Team
from tests.formats.sources import SOURCES, zipped
from transcripts import interchange
from transcripts.ledger.default_project import default_project
from transcripts.models import ImportJob, Thread

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
HTMX = {"HX-Request": "true"}


def _api(team: Team, *scopes: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {team.token(team.alpha, *scopes)}"})


def _post(client: Client, raw: bytes, query: str = "", **extra: str) -> Any:
    return client.post(
        f"/api/v1/imports{query}", raw, content_type="application/octet-stream", **extra
    )


def test_every_import_reports_threads_messages_and_branches() -> None:
    raw = (FIXTURES / "openai_chat.json").read_bytes()
    result = interchange.import_stream(io.BytesIO(raw), project=default_project())
    report = result.report
    assert report["source"] == "openai" and report["threads"] == 1 and report["branches"] == 1
    assert report["messages"] == len(json.loads(raw)["messages"])
    assert report["skipped"] == [] and report["skippedTotal"] == 0
    canonical = interchange.export_thread(Thread.objects.get(pk=result.thread_ids[0]), "canonical")
    again = interchange.import_data(json.loads(canonical.content), project=default_project())
    assert again.report["threads"] == 1 and again.report["source"] == "canonical"


def test_the_api_answers_an_export_zip_with_its_report(team: Team) -> None:
    response = _post(_api(team), zipped("chatgpt_export"), HTTP_X_FILENAME="export.zip")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["format"] == "chatgpt" and len(body["threadIds"]) == 2
    assert body["report"]["branches"] == 5 and body["report"]["filesInlined"] == 3
    assert {"where", "what", "why"} == set(body["report"]["skipped"][0])
    assert set(
        Thread.objects.filter(pk__in=body["threadIds"]).values_list("project", flat=True)
    ) == {team.alpha.pk}


def test_the_api_refuses_unsafe_or_unknown_zips_with_a_4xx(team: Team, settings: Any) -> None:
    client = _api(team)
    before = Thread.objects.count()
    trick = _post(client, zipped("chatgpt_export", extra={"../../etc/cron.d/x": b"x"}))
    assert trick.status_code == 422 and "refused" in trick.json()["error"]["message"]
    unknown = _post(client, zipped("chatgpt_export", prefix="a/", extra={"b/c.txt": b"x"}))
    assert unknown.status_code == 201
    nothing = _post(client, _only({"readme.txt": b"hello"}))
    assert nothing.status_code == 422 and "no export" in nothing.json()["error"]["message"]
    settings.TRANSCRIPTS_MAX_UNZIPPED_BYTES = 1000
    bomb = _post(client, _only({"conversations.json": b"[" + b" " * 100_000 + b"]"}))
    assert bomb.status_code == 413
    assert Thread.objects.count() == before + 2


def test_an_outsider_token_cannot_import_and_a_reader_token_is_refused(team: Team) -> None:
    assert _post(Client(), zipped("claude_ai_export")).status_code == 401
    assert _post(_api(team, "read"), zipped("claude_ai_export")).status_code == 403


def test_a_zipped_single_export_is_read_as_its_format(team: Team) -> None:
    raw = _only({"export/librechat.json": (SOURCES / "librechat_tree.json").read_bytes()})
    response = _post(_api(team), raw)
    assert response.status_code == 201 and response.json()["format"] == "librechat"


def test_a_background_job_stores_the_report(team: Team, settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 10
    response = _post(_api(team), zipped("claude_ai_export"), HTTP_X_FILENAME="claude.zip")
    assert response.status_code == 202
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.file.name.endswith(".zip")
    interchange.run_import_job(job.id)
    polled = _api(team).get(f"/api/v1/imports/{job.id}").json()
    assert polled["status"] == "done" and polled["format"] == "claude-ai"
    assert polled["report"]["threads"] == 2 and polled["report"]["branches"] == 4
    client = team.client(team.editor)
    upload = SimpleUploadedFile("claude.zip", zipped("claude_ai_export"))
    assert client.post("/import/", {"file": upload}, headers=HTMX).status_code == 202
    mine = ImportJob.objects.get(user=team.editor)
    interchange.run_import_job(mine.id)
    page = client.get(f"/import/{mine.id}/", headers=HTMX)
    assert b"4 branches" in page.content and b"file map.jpg" in page.content


def test_the_import_page_shows_the_report(team: Team) -> None:
    client = team.client(team.editor)
    upload = SimpleUploadedFile("openwebui.json", (SOURCES / "open_webui_export.json").read_bytes())
    response = client.post("/import/", {"file": upload, "format": ""}, headers=HTMX)
    assert response.status_code == 201
    content = response.content.decode()
    assert "2 threads, 8 messages, 4 branches" in content
    assert "1 item not kept as it was" in content and "homework.pdf" in content
    zipped_upload = SimpleUploadedFile("chatgpt.zip", zipped("chatgpt_export"))
    response = client.post("/import/", {"file": zipped_upload}, headers=HTMX)
    assert response.status_code == 201 and "3 files from the zip" in response.content.decode()


def test_the_import_page_refuses_a_bad_zip_and_says_why(team: Team) -> None:
    client = team.client(team.editor)
    upload = SimpleUploadedFile("x.zip", zipped("chatgpt_export", extra={"/abs.json": b"{}"}))
    response = client.post("/import/", {"file": upload}, headers=HTMX)
    assert response.status_code == 422
    assert b"Nothing was imported" in response.content and b"absolute path" in response.content
    viewer = team.client(team.viewer)
    upload = SimpleUploadedFile("x.zip", zipped("claude_ai_export"))
    assert viewer.post("/import/", {"file": upload}).status_code == 403


def _only(members: dict[str, bytes]) -> bytes:
    """A zip holding just members."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_the_command_line_prints_the_report(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    archive.write_bytes(zipped("chatgpt_export"))
    out = io.StringIO()

    call_command("import_transcripts", str(archive), stdout=out, stderr=io.StringIO())

    printed = out.getvalue()
    assert "Imported 2 thread(s) as chatgpt" in printed
    assert "5 branch(es), 3 file(s) from the archive" in printed
    assert "  skipped " in printed

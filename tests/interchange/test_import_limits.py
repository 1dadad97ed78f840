"""Every import path keeps its limits: hostile files (built here, small) posted to the API, the
import page and a worker job each get a 4xx naming the limit, and store nothing. The ones that
once took gigabytes run under a memory cap, so a regression fails the test, not the machine."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from transcripts.errors import BodyTooLarge, InvalidInput
from transcripts.formats.sources import JsonLimits, JsonScan
from transcripts.interchange import run_import_job
from transcripts.interchange.limits import memory_cap
from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import ImportJob, ImportStatus, Message, Thread

pytestmark = pytest.mark.django_db
MB = 1 << 20
DEPTH_BOMB = b"[" * 200_000 + b"]" * 200_000


@pytest.fixture(autouse=True)
def _capped(settings: Any, tmp_path: Any) -> Iterator[None]:
    """Each test runs under 1 GB more address space than the process has (the old code
    needed 23 GB for the depth bomb), with its uploads in a throwaway folder."""
    settings.MEDIA_ROOT = tmp_path
    with memory_cap(1 << 30):
        yield


@pytest.fixture
def api() -> ApiClient:
    """A client holding an ingest + read token of the default project."""
    _, raw = issue_token(project=default_project(), name="test", scopes=("ingest", "read"))
    return ApiClient(raw)


def zipped(members: dict[str, bytes]) -> bytes:
    """A deflated zip of members."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def chatgpt(*parts: object) -> bytes:
    """A ChatGPT conversations.json of one conversation whose one message has parts."""
    content = {"content_type": "multimodal_text", "parts": list(parts)}
    message = {"id": "a", "author": {"role": "user"}, "content": content, "create_time": 1}
    node = {"id": "a", "message": message, "parent": None, "children": []}
    conversation = {"title": "t", "create_time": 1, "mapping": {"a": node}, "current_node": "a"}
    return json.dumps([conversation]).encode()


def image(pointer: str = "file-abc") -> dict[str, str]:
    """A ChatGPT image part pointing at a file of the export."""
    return {"content_type": "image_asset_pointer", "asset_pointer": f"file-service://{pointer}"}


def refused(response: Any, status: int, limit: str) -> dict[str, Any]:
    """The API's error, checked: the status, the limit named, nothing stored."""
    assert response.status_code == status, response.content
    error: dict[str, Any] = error_of(response)
    assert error["details"]["limit"] == limit, error
    assert not Thread.objects.exists() and not Message.objects.exists()
    return error


def by_job(api: ApiClient, settings: Any, raw: bytes, limit: str) -> ImportJob:
    """raw imported by a worker job: it fails naming limit, and stores nothing."""
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 1
    response = api.post_raw("/imports", raw, "application/octet-stream")
    assert response.status_code == 202, response.content
    job = run_import_job(response.json()["id"])
    assert job.status == ImportStatus.FAILED, job.error
    assert job.error["details"]["limit"] == limit, job.error
    assert not Thread.objects.exists()
    return job


def test_a_depth_bomb_in_a_zip_is_refused_by_the_api_the_page_and_a_job(
    api: ApiClient, team: Team, settings: Any
) -> None:
    raw = zipped({"conversations.json": DEPTH_BOMB})
    assert len(raw) < 2000
    error = refused(
        api.post_raw("/imports", raw, "application/zip"), 422, "TRANSCRIPTS_MAX_JSON_DEPTH"
    )
    assert error["details"]["maxDepth"] == 64 and "deeper than 64 levels" in error["message"]
    page = team.client(team.editor).post("/import/", {"file": SimpleUploadedFile("e.zip", raw)})
    assert page.status_code == 422 and b"deeper than 64 levels" in page.content
    by_job(api, settings, raw, "TRANSCRIPTS_MAX_JSON_DEPTH")


@pytest.mark.parametrize("fmt", ["", "chatgpt", "claude-ai", "canonical", "openai"])
def test_a_deep_plain_file_is_refused_in_every_format_by_a_job(
    api: ApiClient, settings: Any, fmt: str
) -> None:
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 1
    deep = b"[" * 600_000 + b"]" * 600_000
    response = api.post_raw(f"/imports?format={fmt}", deep, "application/json")
    job = run_import_job(response.json()["id"])
    assert job.status == ImportStatus.FAILED and "deeper than 64" in job.error["message"]
    assert not Thread.objects.exists()


def test_a_zip_inflating_past_the_total_is_a_413(api: ApiClient, settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_UNZIPPED_BYTES = 100_000
    raw = zipped({"conversations.json": chatgpt("x" * 60_000), "b.txt": os.urandom(60_000)})
    refused(api.post_raw("/imports", raw, "application/zip"), 413, "TRANSCRIPTS_MAX_UNZIPPED_BYTES")


def test_a_member_inflating_past_the_ratio_is_a_422(api: ApiClient) -> None:
    raw = zipped({"conversations.json": b"[" + b" " * (5 * MB) + b"]"})
    error = refused(
        api.post_raw("/imports", raw, "application/zip"), 422, "TRANSCRIPTS_MAX_ZIP_RATIO"
    )
    assert error["details"]["maxRatio"] == 200


def test_a_string_too_long_is_a_413_before_it_is_parsed(api: ApiClient, settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_IMPORT_STRING_BYTES = 1000
    raw = zipped({"conversations.json": chatgpt("x" * 999, "y" * 1001)})
    limit = "TRANSCRIPTS_MAX_IMPORT_STRING_BYTES"
    refused(api.post_raw("/imports", raw, "application/zip"), 413, limit)
    refused(
        api.post_raw("/imports?format=chatgpt", chatgpt("y" * 1001), "application/json"), 413, limit
    )


def test_a_message_too_large_is_a_413(api: ApiClient, settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_IMPORT_MESSAGE_BYTES = 10_000
    raw = chatgpt(*["x" * 3000] * 4)
    response = api.post_raw("/imports?format=chatgpt", raw, "application/json")
    refused(response, 413, "TRANSCRIPTS_MAX_IMPORT_MESSAGE_BYTES")


def test_a_document_too_large_to_read_whole_is_a_413(api: ApiClient, settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES = 100
    raw = json.dumps({"messages": [{"role": "user", "content": "x" * 200}]}).encode()
    limit = "TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES"
    refused(api.post_raw("/imports?format=openai", raw, "application/json"), 413, limit)
    refused(api.post_raw("/imports", zipped({"a.json": raw}), "application/zip"), 413, limit)


def test_a_file_referenced_too_often_is_a_422(api: ApiClient, settings: Any) -> None:
    parts = [image()] * 20
    raw = zipped({"conversations.json": chatgpt(*parts), "file-abc.png": os.urandom(100_000)})
    limit = "TRANSCRIPTS_MAX_IMPORT_FILE_REFERENCES"
    error = refused(api.post_raw("/imports", raw, "application/zip"), 422, limit)
    assert error["details"]["maxReferences"] == 10
    by_job(api, settings, raw, limit)


def test_a_conversation_inlining_too_many_bytes_is_a_413(api: ApiClient, settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_CONVERSATION_FILE_BYTES = 250_000
    raw = zipped(
        {"conversations.json": chatgpt(*[image()] * 3), "file-abc.png": os.urandom(100_000)}
    )
    limit = "TRANSCRIPTS_MAX_CONVERSATION_FILE_BYTES"
    refused(api.post_raw("/imports", raw, "application/zip"), 413, limit)


def test_files_within_the_limits_are_inlined_once_per_reference(api: ApiClient) -> None:
    raw = zipped({"conversations.json": chatgpt(*[image()] * 3), "file-abc.png": os.urandom(1000)})
    response = api.post_raw("/imports", raw, "application/zip")
    assert response.status_code == 201, response.content
    assert response.json()["report"]["filesInlined"] == 3


def test_a_job_out_of_memory_fails_saying_so_and_the_worker_lives_on(
    api: ApiClient, settings: Any
) -> None:
    settings.TRANSCRIPTS_IMPORT_JOB_MEMORY_MB = 1
    big = json.dumps({"messages": [{"role": "user", "content": "x" * 200} for _ in range(50_000)]})
    job = by_job(api, settings, big.encode(), "TRANSCRIPTS_IMPORT_JOB_MEMORY_MB")
    assert job.error["message"] == "the import needed more than 1 MB"
    settings.TRANSCRIPTS_IMPORT_JOB_MEMORY_MB = 1024
    response = api.post_raw("/imports?format=chatgpt", chatgpt("fine"), "application/json")
    assert run_import_job(response.json()["id"]).status == ImportStatus.DONE


def test_a_single_conversation_too_large_to_read_whole_is_a_413(
    api: ApiClient, settings: Any
) -> None:
    settings.TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES = 1000
    conversation = json.loads(chatgpt("x" * 2000))[0]
    raw = json.dumps(conversation).encode()
    limit = "TRANSCRIPTS_MAX_IMPORT_DOCUMENT_BYTES"
    refused(api.post_raw("/imports?format=chatgpt", raw, "application/json"), 413, limit)
    refused(
        api.post_raw("/imports", zipped({"conversations.json": raw}), "application/zip"), 413, limit
    )
    by_job(api, settings, raw, limit)


def test_a_conversation_too_large_is_a_413_before_it_is_parsed(
    api: ApiClient, settings: Any
) -> None:
    settings.TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES = 5000
    raw = chatgpt(*["x" * 1000] * 6)
    limit = "TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES"
    refused(api.post_raw("/imports?format=chatgpt", raw, "application/json"), 413, limit)
    by_job(api, settings, zipped({"conversations.json": raw}), limit)
    settings.TRANSCRIPTS_MAX_IMPORT_ITEM_BYTES = 10_000
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 1 << 20
    response = api.post_raw("/imports?format=chatgpt", raw, "application/json")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 1 << 16])
def test_the_scan_counts_nesting_outside_strings_in_pieces_of_any_size(piece: int) -> None:
    value = {"a": ['[[[{{{"', "\\", '\\"[[[', {"b": [[["]]]"]]]}], "c": "\u00e9\\u0041"}
    raw = json.dumps(value).encode()
    scan = JsonScan(JsonLimits(depth=6, string_bytes=13))
    for start in range(0, len(raw), piece):
        scan.feed(raw[start : start + piece])
    assert scan.depth == 0 and not scan.in_string and scan.lines == 0
    with pytest.raises(InvalidInput, match="deeper than 5 levels"):
        JsonScan(JsonLimits(depth=5)).feed(raw)
    with pytest.raises(BodyTooLarge, match="string of more than 12 bytes"):
        JsonScan(JsonLimits(string_bytes=12)).feed(raw)


def _scan_outcome(pieces: list[bytes], limits: Any, *, skims: bool) -> tuple[Any, ...]:
    from transcripts.errors import DomainError
    from transcripts.formats.sources import JsonScan

    scan = JsonScan(limits, skims=skims)
    try:
        for piece in pieces:
            scan.feed(piece)
    except DomainError as exc:
        return (type(exc).__name__, exc.message, exc.details)
    string_bytes = scan.string_bytes if scan.in_string else None
    return (scan.depth, scan.in_string, scan.escaped, string_bytes, scan.offset, scan.item_start)


def test_the_json_guard_says_the_same_whether_it_skims_or_walks():
    """Pieces no longer than the string limit are skimmed (their strings skipped inside one
    regex call); walking every string instead refuses at the same place, or ends in the same
    state."""
    import random

    from transcripts.formats.sources import JsonLimits

    rnd = random.Random(30)
    alphabet = [b'"', b"\\", b"[", b"]", b"{", b"}", b"a", b"\n", b" ", b'"x"', b'\\"']
    for _ in range(3000):
        data = b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 80)))
        limits = JsonLimits(
            depth=rnd.randint(1, 6), string_bytes=rnd.randint(1, 40), item_bytes=rnd.randint(1, 40)
        )
        cuts = sorted(rnd.sample(range(len(data) + 1), min(len(data), rnd.randint(0, 5))))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        walked = _scan_outcome(pieces, limits, skims=False)
        assert _scan_outcome(pieces, limits, skims=True) == walked, (data, cuts, limits)

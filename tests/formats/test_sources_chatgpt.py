"""ChatGPT export zips (2025-26): every split, assets and Canvas from the zip, new content types."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tests.formats.sources import SOURCES, zipped
from transcripts import interchange
from transcripts.errors import BodyTooLarge, InvalidInput
from transcripts.formats import Skips, TreeThread, iter_chatgpt
from transcripts.formats.chatgpt import import_chatgpt
from transcripts.formats.chatgpt_parts import ExportContext
from transcripts.formats.document import active_path, leaves
from transcripts.formats.zips import Archive, ZipLimits, detect_zip_source
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Thread
from transcripts.selectors import active_path as stored_path

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"


def read_zip(raw: bytes) -> tuple[list[TreeThread], ExportContext]:
    """The threads of a ChatGPT export zip, read as the importer reads them."""
    archive = Archive(io.BytesIO(raw), ZipLimits())
    ctx = ExportContext(skips=Skips(), archive=archive)
    threads: list[TreeThread] = []
    for name in archive.conversation_files():
        ctx.source = name
        with archive.open(name) as stream:
            threads.extend(iter_chatgpt(stream, context=ctx))  # type: ignore[arg-type]
    return threads, ctx


def by_id(thread: TreeThread) -> dict[str, dict[str, Any]]:
    """The thread's messages by id."""
    return {message["id"]: message for message in thread.messages}


def test_it_reads_every_split_in_number_order() -> None:
    archive = Archive(io.BytesIO(zipped("chatgpt_export")), ZipLimits())
    assert detect_zip_source(archive) == "chatgpt"
    assert archive.conversation_files() == ["conversations-000.json", "conversations-001.json"]
    threads, _ = read_zip(zipped("chatgpt_export"))
    assert [t.title for t in threads] == ["Pixel poem", "Grey square"]


def test_every_branch_is_kept_and_the_current_node_is_active() -> None:
    (poem, square), _ = read_zip(zipped("chatgpt_export"))
    assert sorted(leaves(poem)) == ["a-edit", "a1", "odd"]
    assert poem.active_leaf == "odd"
    assert [m["id"] for m in active_path(poem)][:3] == ["sys", "u1", "th"]
    assert sorted(leaves(square)) == ["b-done", "b-text"]
    assert square.active_leaf == "b-done"


def test_images_are_inlined_from_the_zip_and_missing_ones_labelled() -> None:
    (poem, square), ctx = read_zip(zipped("chatgpt_export"))
    upload, missing, text = by_id(poem)["u1"]["parts"]
    assert upload["type"] == "file" and upload["mimeType"] == "image/png"
    assert upload["url"].startswith(PIXEL)
    assert missing == {
        "type": "text",
        "text": "[missing image: file-service://file-Missing42 is not in the export]",
    }
    assert text["text"].startswith("Write a short poem")
    result, generated = by_id(square)["b-image"]["parts"]
    assert result["type"] == "tool-result" and result["toolName"] == "dalle.text2im"
    assert (
        generated["url"].startswith(PIXEL) and generated["name"] == "file_00000000bb22-5f1e2d3c.png"
    )
    assert ctx.skips.counts["assets"] == 3
    assert [(s.what, s.why) for s in ctx.skips.items if s.what.startswith("image")] == [
        ("image file-service://file-Missing42", "its file is not in the export")
    ]


def test_a_canvas_call_keeps_its_payload_and_its_document_from_textdocs() -> None:
    (poem, _), ctx = read_zip(zipped("chatgpt_export"))
    messages = by_id(poem)
    [call] = messages["canvas-call"]["parts"]
    assert call["toolName"] == "canmore.create_textdoc"
    assert call["input"] == {
        "name": "pixel_poem",
        "type": "document",
        "content": "Grey pixel, small and bright",
    }
    result, document = messages["canvas-done"]["parts"]
    assert result["toolCallId"] == "canvas-call"
    assert document["name"] == "pixel_poem" and document["mimeType"] == "application/json"
    assert ctx.used_textdocs == {"textdocs/6790aa0000000000000000000000000a.json"}


def test_new_content_types_become_parts_or_labels_never_nothing() -> None:
    (poem, _), ctx = read_zip(zipped("chatgpt_export"))
    messages = by_id(poem)
    assert messages["th"]["parts"] == [
        {"type": "reasoning", "text": "Looking at the pixel\n\nIt is a single grey pixel."}
    ]
    assert messages["rr"]["parts"] == [{"type": "reasoning", "text": "Thought for 3s"}]
    [page] = messages["page"]["parts"]
    assert page["type"] == "tool-result" and page["toolCallId"] == "search"
    assert page["output"] == (
        "[web page: Pixel poems — https://poems.example/pixel]\n\n"
        "A pixel is a tiny square of light."
    )
    assert messages["err"]["parts"] == [{"type": "text", "text": "The checker is not available."}]
    assert messages["odd"]["parts"] == [
        {"type": "text", "text": "[ChatGPT app_pairing_content content]"}
    ]
    assert messages["odd"]["metadata"]["extra"]["chatgpt"]["content"]["workspaces"] == []
    assert ("app_pairing_content content") in [s.what for s in ctx.skips.items]


def test_messages_chatgpt_does_not_show_are_kept_hidden() -> None:
    (poem, _), _ = read_zip(zipped("chatgpt_export"))
    messages = by_id(poem)
    hidden = {key for key, m in messages.items() if m["metadata"].get("hidden")}
    assert hidden == {"sys", "rr", "search", "page", "canvas-call"}


def test_pointers_in_a_bare_conversations_json_are_reported_unresolved() -> None:
    skips = Skips()
    data = json.loads((SOURCES / "chatgpt_export" / "conversations-000.json").read_text())
    [poem] = import_chatgpt(data, skips)
    upload = by_id(poem)["u1"]["parts"][0]
    assert upload == {"type": "file", "mimeType": "image/*", "url": "sediment://file_00000000aa11"}
    assert "import the export's zip" in skips.items[0].why


@pytest.mark.django_db
def test_the_zip_imports_with_a_report_of_what_it_holds() -> None:
    result = interchange.import_stream(
        io.BytesIO(zipped("chatgpt_export")), project=default_project()
    )
    assert result.format == "chatgpt" and len(result.thread_ids) == 2
    report = result.report
    assert (report["threads"], report["messages"], report["branches"]) == (2, 20, 5)
    assert report["filesInlined"] == 3 and report["labelled"] == 3
    whats = [item["what"] for item in report["skipped"]]
    assert "canvas document" in whats and "image file-service://file-Missing42" in whats
    assert report["skippedTotal"] == len(report["skipped"]) == 3
    poem = Thread.objects.get(pk=result.thread_ids[0])
    assert list(stored_path(poem))[-1].parts == [
        {"type": "text", "text": "[ChatGPT app_pairing_content content]"}
    ]
    assert Message.objects.filter(thread=poem).count() == 15


@pytest.mark.django_db
def test_an_export_zipped_again_from_its_folder_is_found_in_that_folder() -> None:
    raw = zipped("chatgpt_export", prefix="chatgpt-2026-01-01/")
    result = interchange.import_stream(io.BytesIO(raw), project=default_project())
    assert result.report["filesInlined"] == 3


@pytest.mark.django_db
def test_a_zip_with_a_path_trick_is_refused_whole() -> None:
    before = Thread.objects.count()
    for name in ("../evil.json", "/etc/passwd", "a\\b.json", "C:/x.json"):
        raw = zipped("chatgpt_export", extra={name: b"{}"})
        with pytest.raises(InvalidInput) as caught:
            interchange.import_stream(io.BytesIO(raw), project=default_project())
        assert "refused" in caught.value.message
    assert Thread.objects.count() == before


@pytest.mark.django_db
def test_a_zip_bomb_is_refused_before_it_is_inflated(settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_UNZIPPED_BYTES = 1 << 20
    raw = zipped("chatgpt_export", extra={"padding.bin": b"\0" * (2 << 20)})
    assert len(raw) < 100_000
    with pytest.raises(BodyTooLarge):
        interchange.import_stream(io.BytesIO(raw), project=default_project())
    settings.TRANSCRIPTS_MAX_ZIP_MEMBERS = 3
    with pytest.raises(BodyTooLarge):
        interchange.import_stream(io.BytesIO(zipped("chatgpt_export")), project=default_project())


@pytest.mark.django_db
def test_an_image_larger_than_the_limit_is_labelled(settings: Any) -> None:
    settings.TRANSCRIPTS_MAX_IMPORT_ASSET_BYTES = 10
    result = interchange.import_stream(
        io.BytesIO(zipped("chatgpt_export")), project=default_project()
    )
    assert result.report["filesInlined"] == 0
    assert any("more than the 10" in item["why"] for item in result.report["skipped"])


@pytest.mark.django_db
def test_a_broken_split_imports_nothing() -> None:
    before = Thread.objects.count()
    raw = zipped("chatgpt_export", extra={"conversations-002.json": b'[{"mapping": 3}]'})
    with pytest.raises(InvalidInput) as caught:
        interchange.import_stream(io.BytesIO(raw), project=default_project())
    assert caught.value.details["problems"][0]["message"] == "expected an object, got number"
    assert Thread.objects.count() == before


@pytest.mark.django_db
def test_a_zip_of_another_app_is_not_read_as_chatgpt() -> None:
    with pytest.raises(InvalidInput) as caught:
        interchange.import_stream(
            io.BytesIO(zipped("claude_ai_export")), "chatgpt", project=default_project()
        )
    assert caught.value.details["detected"] == "claude-ai"
    with pytest.raises(InvalidInput):
        interchange.import_stream(io.BytesIO(b"PK\x03\x04 not a zip"), project=default_project())


@pytest.mark.django_db
def test_a_damaged_member_is_a_422_naming_it() -> None:
    raw = bytearray(zipped("chatgpt_export"))
    start = raw.index(b"conversations-000.json") + len("conversations-000.json")
    raw[start + 40 : start + 60] = b"\xff" * 20
    with pytest.raises(InvalidInput) as caught:
        interchange.import_stream(io.BytesIO(bytes(raw)), project=default_project())
    assert "unreadable in the zip" in caught.value.message


def test_a_plugin_answer_of_the_function_role_is_a_tool_message() -> None:
    data = json.loads((SOURCES / "chatgpt_export" / "conversations-001.json").read_text())
    data[0]["mapping"]["b-image"]["message"]["author"]["role"] = "function"
    [square] = import_chatgpt(data)
    assert by_id(square)["b-image"]["role"] == "tool"

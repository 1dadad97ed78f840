"""Import and export through the database: every branch, ids, the active path."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.factories import ask, conversation, last_message, make_run, say
from transcripts import interchange, selectors
from transcripts.errors import InvalidInput, NotFound
from transcripts.formats import FORMATS
from transcripts.ledger.default_project import default_project
from transcripts.models import Event, Message, Run, RunStatus, Thread
from transcripts.selectors import active_path

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"


def _branched_thread() -> Thread:
    thread = conversation(turns=1, title="Branches")
    prompt = Message.objects.get(thread=thread, depth=0)
    say(thread, "a second answer", fork_from=prompt.id)
    ask(thread, "follow-up")
    make_run(
        thread,
        ("reasoning", {"text": "thinking", "signature": "sig"}),
        ("tool-call", {"toolCallId": "c1", "toolName": "search", "input": {"q": "x"}}),
        ("tool-result", {"toolCallId": "c1", "output": {"hits": 1}, "isError": False}),
        ("file", {"mimeType": "image/png", "url": "https://example.com/a.png", "name": "a"}),
        ("text-delta", {"delta": "done"}),
    )
    thread.refresh_from_db()
    return thread


def _snapshot(thread: Thread) -> dict[str, Any]:
    messages = Message.objects.filter(thread=thread).order_by("id")
    return {
        "messages": [m.as_canonical() for m in messages],
        "active": [m.id for m in active_path(thread)],
        "head": Thread.objects.get(pk=thread.pk).head_id,
        "runs": sorted(
            (r.id, r.status, r.fork_from_id, r.superseded_by_id)
            for r in Run.objects.filter(thread=thread, status__in=["committed", "superseded"])
        ),
    }


def test_a_canonical_export_reimports_as_the_same_thread():
    thread = _branched_thread()
    before = _snapshot(thread)
    exported = interchange.export_thread(thread, "canonical")
    Thread.objects.filter(pk=thread.pk).delete()

    result = interchange.import_data(json.loads(exported.content), project=default_project())
    assert result.thread_ids == [thread.id]
    assert _snapshot(Thread.objects.get(pk=thread.id)) == before


def test_a_second_import_of_the_same_export_gets_new_ids():
    thread = _branched_thread()
    document = json.loads(interchange.export_thread(thread, "canonical").content)
    [copy_id] = interchange.import_data(document, project=default_project()).thread_ids
    assert copy_id != thread.id
    copy = Thread.objects.get(pk=copy_id)
    original_texts = [m.parts for m in active_path(thread)]
    assert [m.parts for m in active_path(copy)] == original_texts
    assert (
        Message.objects.filter(thread=copy).count() == Message.objects.filter(thread=thread).count()
    )


def test_imported_messages_replay_from_their_events():
    thread = _branched_thread()
    [copy_id] = interchange.import_data(
        json.loads(interchange.export_thread(thread, "canonical").content),
        project=default_project(),
    ).thread_ids
    for run in Run.objects.filter(thread_id=copy_id):
        kinds = set(Event.objects.filter(run=run).values_list("kind", flat=True))
        assert kinds == {"message"}

        projected = selectors.project_run(run).messages
        stored = [m.as_canonical() for m in run.messages.order_by("position")]
        assert [p["id"] for p in projected] == [s["id"] for s in stored]
        assert [p["parts"] for p in projected] == [s["parts"] for s in stored]


@pytest.mark.parametrize("fmt", [k for k, s in FORMATS.items() if s.exporter])
def test_every_export_format_writes_the_thread(fmt):
    thread = _branched_thread()
    exported = interchange.export_thread(thread, fmt)
    assert exported.filename.startswith(f"thread-{thread.id}.")
    assert "follow-up" in exported.content


def test_a_linear_export_follows_the_chosen_branch():
    thread = _branched_thread()
    first_answer = Message.objects.get(thread=thread, depth=1, active=False)
    exported = json.loads(interchange.export_thread(thread, "openai", leaf=first_answer.id).content)
    assert [m["content"] for m in exported["messages"]] == ["question 0", "answer 0 "]
    with pytest.raises(NotFound):
        interchange.export_thread(thread, "openai", leaf="01" + "0" * 24)


def test_an_unknown_format_is_refused():
    thread = conversation()
    with pytest.raises(InvalidInput):
        interchange.export_thread(thread, "docx")
    with pytest.raises(InvalidInput):
        interchange.import_data([], "docx", project=default_project())


def test_the_chatgpt_sample_imports_every_branch_with_its_active_path():
    raw = (FIXTURES / "chatgpt_conversations.json").read_bytes()
    document = json.loads(raw)
    result = interchange.import_stream(io.BytesIO(raw), project=default_project())
    assert result.format == "chatgpt"
    assert len(result.thread_ids) == len(document)
    for conversation_doc, thread_id in zip(document, result.thread_ids, strict=True):
        thread = Thread.objects.get(pk=thread_id)
        assert thread.title == conversation_doc["title"]
        head = Message.objects.get(pk=thread.head_id)
        assert head.metadata.get("sourceMessageId") == conversation_doc["current_node"]
        fork_points = [m for m in Message.objects.filter(thread=thread) if m.children.count() > 1]
        mapping = conversation_doc["mapping"]
        branching = [n for n in mapping.values() if len(n.get("children") or []) > 1]
        assert len(fork_points) >= (1 if branching else 0)


def test_invalid_input_is_refused_and_nothing_is_imported():
    before = Thread.objects.count()
    with pytest.raises(InvalidInput) as refused:
        interchange.import_data(
            {"format": "transcripts.message_schema", "version": 1, "messages": 3},
            project=default_project(),
        )
    assert refused.value.details["problems"]
    with pytest.raises(InvalidInput):
        interchange.parse_document(b"{not json")
    with pytest.raises(InvalidInput):
        interchange.import_data({"something": "else"}, project=default_project())
    with pytest.raises(InvalidInput):
        interchange.import_stream(io.BytesIO(b'[{"mapping": 12}]'), project=default_project())
    assert Thread.objects.count() == before


def test_an_openai_import_becomes_a_linear_thread():
    document = json.loads((FIXTURES / "openai_chat.json").read_text())
    [thread_id] = interchange.import_data(document, "openai", project=default_project()).thread_ids
    path = list(active_path(Thread.objects.get(pk=thread_id)))
    assert len(path) >= 2
    assert all(run.status == RunStatus.COMMITTED for run in Run.objects.filter(thread_id=thread_id))
    assert last_message(path[-1].run).id == path[-1].id


def test_the_cli_imports_and_exports(tmp_path):
    from django.core.management import CommandError, call_command

    source = tmp_path / "chat.json"
    source.write_text((FIXTURES / "openai_chat.json").read_text())
    out = io.StringIO()
    call_command("import_transcripts", str(source), "--format", "openai", stdout=out)
    thread_id = out.getvalue().splitlines()[1].strip()
    target = tmp_path / "out.md"
    call_command(
        "export_thread", thread_id, "--format", "markdown", "-o", str(target), stderr=io.StringIO()
    )
    assert target.read_text().startswith("# ")
    with pytest.raises(CommandError, match="nothing imported"):
        broken = tmp_path / "broken.json"
        broken.write_text("[1, 2")
        call_command("import_transcripts", str(broken), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no thread"):
        call_command("export_thread", "nope")


def test_a_large_import_runs_as_a_job_with_progress(settings, tmp_path):
    from transcripts.models import ImportJob

    settings.MEDIA_ROOT = tmp_path
    raw = (FIXTURES / "chatgpt_conversations.json").read_bytes()
    job = interchange.queue_import(
        project=default_project(),
        content=io.BytesIO(raw),
        filename="conversations.json",
        size=len(raw),
        fmt=None,
    )
    assert job.status == "queued" and job.progress == 0.0
    interchange.run_import_job(job.id)
    job = ImportJob.objects.get(pk=job.id)
    assert job.status == "done" and job.progress == 1.0 and job.format == "chatgpt"
    assert Thread.objects.filter(pk__in=job.thread_ids).count() == len(json.loads(raw))
    assert not list(tmp_path.rglob("*.json"))


def test_a_failed_import_job_says_why_and_imports_nothing(settings, tmp_path):
    from transcripts.models import ImportJob

    settings.MEDIA_ROOT = tmp_path
    before = Thread.objects.count()
    job = interchange.queue_import(
        project=default_project(),
        content=io.BytesIO(b'{"format": "transcripts.message_schema"}'),
        filename="x.json",
        size=34,
        fmt="canonical",
    )
    interchange.run_import_job(job.id)
    job = ImportJob.objects.get(pk=job.id)
    assert job.status == "failed"
    assert job.error is not None and job.error["code"] == "invalid"
    assert Thread.objects.count() == before

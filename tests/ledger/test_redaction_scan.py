"""The acceptance test of redaction: a secret sent everywhere each way in can carry it is, once
the messages and the failed run holding it are redacted, in no text or JSON column of any
table, and in no API read, export or live stream.

The secret goes wherever a message's or a run's content may hold it: text, reasoning and its
signature, tool names, inputs and outputs, file names and urls, the metadata of every event
kind and its extra fields, custom usage keys, data-* and system.* events, error events and a
run's error. It stays out of what redaction keeps (ids, kinds, timestamps) and out of what a
thread or a run is given when created (a chosen title, metadata), which is no message's
content; a title an import takes from the first message does hold it.

A second test puts the secret only after, between and beside messages and in titles every
path makes from a first message, and redacts only the messages holding it; a third checks that
the worker's sweep vacuums the rewritten tables, once.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection
from django.test import Client
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.api.conftest import ApiClient
from tests.api.sse_client import frames
from tests.base import Team
from tests.factories import make_run, make_thread, user_message
from tests.live_server import LiveServer
from tests.otel.spans import chat, request, text
from transcripts import interchange
from transcripts.ledger import moderation
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.shares import create_share
from transcripts.ledger.vacuum import REDACTED_TABLES
from transcripts.models import Message, Project, Run, RunStatus, Thread
from transcripts.worker.sweeps import sweep

pytestmark = pytest.mark.django_db(transaction=True)

# One word, so that the search vectors would keep it as a lexeme of its own.
SECRET = "zq7vexmarmot"
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"

# --- the event API: metadata and extra fields in every event kind ----------------------------


def _numbered(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "events": [
            {"seq": seq, "kind": kind, "data": data}
            for seq, (kind, data) in enumerate(items, start=1)
        ]
    }


def _rich_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "inputTokenDetails": {"cacheReadTokens": 1, "note": SECRET},
        "providerCost": f"0.01 {SECRET}",
        SECRET: 7,
    }


COMMITTED_EVENTS = _numbered(
    (
        "message",
        {
            "role": "user",
            "parts": [
                {"type": "text", "text": f"my password is {SECRET}"},
                {"type": "file", "mimeType": "text/plain", "url": f"https://x.test/{SECRET}"},
            ],
            "metadata": {"note": SECRET, "usage": {"inputTokens": 2, "note": SECRET}},
            "extra": SECRET,
        },
    ),
    (
        "message-start",
        {
            "role": "assistant",
            "agentId": "agent-1",
            "metadata": {"custom": SECRET, "nested": {"deep": [SECRET]}},
            "extra": SECRET,
        },
    ),
    ("step-started", {"note": SECRET}),
    ("reasoning", {"text": f"thinking of {SECRET}", "signature": f"sig-{SECRET}"}),
    ("text-delta", {"delta": f"it is {SECRET}", "extra": SECRET}),
    (
        "tool-call",
        {"toolCallId": "call-1", "toolName": f"vault_{SECRET}", "input": {"q": SECRET}},
    ),
    (
        "file",
        {"mimeType": f"image/{SECRET}", "url": f"https://x.test/{SECRET}.png", "name": SECRET},
    ),
    ("data-secret", {"payload": SECRET}),
    ("system.trace", {"payload": [SECRET]}),
    ("error", {"message": f"oops {SECRET}", "code": f"E_{SECRET}", "detail": SECRET}),
    (
        "step-finished",
        {"finishReason": f"stop_{SECRET}", "usage": _rich_usage(10, 5), "extra": SECRET},
    ),
    ("message-end", {"extra": SECRET}),
    (
        "tool-result",
        {"toolCallId": "call-1", "toolName": "vault", "output": {"r": SECRET}, "extra": SECRET},
    ),
    ("message-start", {"role": "assistant"}),
    ("text-delta", {"delta": f"and again {SECRET}"}),
    ("message-end", {}),
    # After the message ended: the projector still gives its usage to that message.
    ("step-finished", {"finishReason": "stop", "usage": _rich_usage(3, 4), "extra": SECRET}),
)

FAILED_EVENTS = _numbered(
    ("message-start", {"role": "assistant", "metadata": {"custom": SECRET}}),
    ("reasoning", {"text": f"thinking of {SECRET}"}),
    ("text-delta", {"delta": f"half an answer with {SECRET}"}),
    ("tool-call", {"toolCallId": "call-9", "toolName": "vault", "input": {"q": SECRET}}),
    ("data-progress", {"note": SECRET}),
    ("error", {"message": f"upstream echoed {SECRET}", "code": 500, "body": SECRET}),
)
RICH_ERROR = {
    "message": f"the model leaked {SECRET}",
    "code": f"E_{SECRET}",
    "detail": SECRET,
    "nested": {"trace": [SECRET]},
}


def _begin_run(api: ApiClient, thread_id: str) -> str:
    response = api.post(f"/threads/{thread_id}/runs", {})
    assert response.status_code == 201, response.json()
    return str(response.json()["id"])


def _new_thread(api: ApiClient, title: str) -> str:
    response = api.post("/threads", {"title": title})
    assert response.status_code == 201, response.json()
    return str(response.json()["id"])


def _through_the_event_api(api: ApiClient, title: str) -> str:
    """A thread with a committed run of every event kind, then a failed run: the thread."""
    thread_id = _new_thread(api, title)
    run_id = _begin_run(api, thread_id)
    appended = api.post(f"/runs/{run_id}/events", COMMITTED_EVENTS)
    assert appended.status_code == 200, appended.json()
    assert api.post(f"/runs/{run_id}/commit").status_code == 200
    return thread_id


def _failed_through_the_event_api(api: ApiClient, thread_id: str) -> str:
    run_id = _begin_run(api, thread_id)
    assert api.post(f"/runs/{run_id}/events", FAILED_EVENTS).status_code == 200
    failed = api.post(f"/runs/{run_id}/fail", {"error": RICH_ERROR})
    assert failed.status_code == 200, failed.json()
    return run_id


# --- the AI SDK adapter ------------------------------------------------------------------------

AI_SDK_CHUNKS = [
    {
        "type": "start",
        "messageId": "msg-ai-1",
        "messageMetadata": {"custom": SECRET, "usage": {"inputTokens": 1, "note": SECRET}},
    },
    {"type": "start-step"},
    {
        "type": "reasoning-start",
        "id": "r1",
        "providerMetadata": {"anthropic": {"signature": f"sig-{SECRET}"}},
    },
    {"type": "reasoning-delta", "id": "r1", "delta": f"thinking of {SECRET}"},
    {"type": "reasoning-end", "id": "r1"},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": f"the answer is {SECRET}"},
    {"type": "text-end", "id": "t1", "providerMetadata": {"p": {"note": SECRET}}},
    {"type": "tool-input-start", "toolCallId": "call-ai", "toolName": f"search_{SECRET}"},
    {"type": "tool-input-delta", "toolCallId": "call-ai", "inputTextDelta": f'{{"q":"{SECRET}'},
    {
        "type": "tool-input-available",
        "toolCallId": "call-ai",
        "toolName": f"search_{SECRET}",
        "input": {"q": SECRET},
        "providerMetadata": {"p": {"note": SECRET}},
        "title": SECRET,
    },
    {"type": "tool-output-available", "toolCallId": "call-ai", "output": {"hits": [SECRET]}},
    {"type": "data-weather", "id": "d1", "data": {"city": SECRET}},
    {"type": "source-url", "sourceId": "s1", "url": f"https://x.test/{SECRET}", "title": SECRET},
    {"type": "file", "url": f"https://x.test/{SECRET}.png", "mediaType": "image/png"},
    {"type": "error", "errorText": f"the tool failed on {SECRET}"},
    {"type": "finish-step"},
    {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {"custom": SECRET, "totalUsage": _rich_usage(3, 4)},
    },
]


def _through_the_ai_sdk_adapter(api: ApiClient) -> str:
    thread_id = _new_thread(api, "AI SDK")
    run_id = _begin_run(api, thread_id)
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in AI_SDK_CHUNKS) + "data: [DONE]\n\n"
    response = api.post_raw(f"/runs/{run_id}/ai-sdk?commit=true", body, "text/event-stream")
    assert response.status_code == 200, response.json()
    assert response.json()["committed"] is True
    return thread_id


# --- every import format -----------------------------------------------------------------------

# Values the formats read as structure (types, roles, ids, times, media types, enumerations):
# the importers check them, and ids and times are what redaction keeps.
_FORMAT_STRUCTURE = {
    "action_type",
    "agent_id",
    "children",
    "content_type",
    "create_time",
    "created_at",
    "createdAt",
    "current_node",
    "finish_reason",
    "id",
    "kind",
    "media_type",
    "mediaType",
    "mimeType",
    "mime_type",
    "outcome",
    "parent",
    "part_kind",
    "role",
    "scope",
    "sequence",
    "state",
    "status",
    "timestamp",
    "tool_call_id",
    "tool_use_id",
    "toolCallId",
    "type",
    "update_time",
}


def _with_secret(value: Any) -> Any:
    """value with the secret added to every string but the structural ones, and to every
    object as a field of its own."""
    if isinstance(value, dict):
        out = {
            key: item
            if key in _FORMAT_STRUCTURE and not isinstance(item, dict | list)
            else _with_secret(item)
            for key, item in value.items()
        }
        out["x_note"] = SECRET
        return out
    if isinstance(value, list):
        return [_with_secret(item) for item in value]
    if isinstance(value, str):
        return f"{value} {SECRET}"
    return value


def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _messages_with_secret(*keys: str) -> Callable[[Any], Any]:
    """The secret in the message-bearing fields of a document (all of it when no keys)."""

    def inject(document: Any) -> Any:
        if not keys:
            return _with_secret(document)
        return {
            key: _with_secret(value) if key in keys else value for key, value in document.items()
        }

    return inject


def _chatgpt_with_secret(document: Any) -> Any:
    out = copy.deepcopy(document)
    for conversation in out:
        for node in conversation["mapping"].values():
            if node.get("message") is not None:
                node["message"] = _with_secret(node["message"])
    return out


FORMAT_DOCUMENTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "openai": ("openai_chat.json", _messages_with_secret("messages")),
    "anthropic": ("anthropic_messages.json", _messages_with_secret("messages", "system")),
    "gemini": ("gemini_rest.json", _messages_with_secret("contents", "systemInstruction")),
    "ai-sdk": ("ai_sdk_ui_messages.json", _messages_with_secret()),
    "pydantic-ai": ("pydantic_ai_run.json", _messages_with_secret()),
    "threadprotocol": ("threadprotocol_example.json", _messages_with_secret("actions")),
    "chatgpt": ("chatgpt_conversations.json", _chatgpt_with_secret),
}


def _through_every_import_format(api: ApiClient, project: Project) -> list[str]:
    """A thread per import format; the canonical one keeps its run's events."""
    thread_ids: list[str] = []
    for fmt, (fixture, inject) in FORMAT_DOCUMENTS.items():
        imported = interchange.import_data(inject(_fixture(fixture)), fmt, project=project)
        thread_ids += imported.thread_ids
    # Canonical JSON with events: the event-API thread exported, deleted, imported again
    # keeps its ids, so its runs keep their events.
    original = _through_the_event_api(api, "Canonical")
    _failed_through_the_event_api(api, original)
    exported = api.get(f"/threads/{original}/export", format="canonical", events="true")
    document = json.loads(b"".join(exported.streaming_content))
    delete_threads([original])
    (reimported,) = interchange.import_data(document, "canonical", project=project).thread_ids
    assert reimported == original
    return [*thread_ids, reimported]


# --- where to look -------------------------------------------------------------------------------

_SCANNED_TYPES = ["text", "character varying", "character", "json", "jsonb", "tsvector"]
_SCANNED_ARRAYS = ["_text", "_varchar", "_bpchar", "_json", "_jsonb"]


def columns_holding(needle: str) -> dict[str, int]:
    """Every text, JSON or search-vector column of every table that holds needle: rows each."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_schema, c.table_name, c.column_name"
            " FROM information_schema.columns c JOIN information_schema.tables t"
            " ON t.table_schema = c.table_schema AND t.table_name = c.table_name"
            " WHERE t.table_type = 'BASE TABLE'"
            " AND c.table_schema NOT IN ('pg_catalog', 'information_schema')"
            " AND (c.data_type = ANY(%s) OR (c.data_type = 'ARRAY' AND c.udt_name = ANY(%s)))"
            " ORDER BY 1, 2, 3",
            [_SCANNED_TYPES, _SCANNED_ARRAYS],
        )
        columns = cursor.fetchall()
        assert len(columns) > 50  # every table of the app, auth's and the task queue's
        found: dict[str, int] = {}
        for schema, table, column in columns:
            cursor.execute(
                f"SELECT count(*) FROM {quote(schema)}.{quote(table)}"
                f" WHERE strpos(lower({quote(column)}::text), %s) > 0",
                [needle.lower()],
            )
            (count,) = cursor.fetchone()
            if count:
                found[f"{table}.{column}"] = count
    return found


def _api_reads(api: ApiClient, thread_id: str) -> dict[str, str]:
    """Every API read of the thread and its runs, by name: the text each answers."""
    paths = {"thread": f"/threads/{thread_id}", "path": f"/threads/{thread_id}/messages"}
    paths["export canonical with events"] = (
        f"/threads/{thread_id}/export?format=canonical&events=true"
    )
    leaves = Message.objects.filter(thread_id=thread_id, children__isnull=True)
    for leaf in leaves.values_list("id", flat=True):
        paths[f"path to {leaf}"] = f"/threads/{thread_id}/messages?leaf={leaf}"
        for fmt in interchange.EXPORT_FORMATS:
            paths[f"export {fmt} to {leaf}"] = (
                f"/threads/{thread_id}/export?format={fmt}&leaf={leaf}"
            )
    for run_id in Run.objects.filter(thread_id=thread_id).values_list("id", flat=True):
        paths[f"run {run_id}"] = f"/runs/{run_id}"
        paths[f"events of {run_id}"] = f"/runs/{run_id}/events?afterSeq=0&limit=1000"
        paths[f"messages of {run_id}"] = f"/runs/{run_id}/messages"
    bodies: dict[str, str] = {}
    for name, path in paths.items():
        response = api.get(path)
        assert response.status_code == 200, (name, response.status_code)
        content = b"".join(response.streaming_content) if response.streaming else response.content
        bodies[name] = content.decode()
    return bodies


def _streamed(server: LiveServer, token: str, run_id: str) -> str:
    """The whole SSE replay of a closed run, which ends with its status frame."""
    url = f"{server.url}/api/v1/runs/{run_id}/stream?afterSeq=0"
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.stream("GET", url, headers=headers, timeout=20) as response:
        assert response.status_code == 200
        replay = list(frames(response))
    assert replay[-1].event == "status", run_id
    return "\n".join(frame.data for frame in replay)


# --- the test ------------------------------------------------------------------------------------


def test_redaction_leaves_the_secret_in_no_column_of_any_table_and_no_read(
    team: Team,
    live_server_asgi: LiveServer,
) -> None:
    token = team.token(team.alpha, "ingest", "read")
    api = ApiClient(token)
    thread_ids = [_through_the_event_api(api, "Event API")]
    failed_run = _failed_through_the_event_api(api, thread_ids[0])
    thread_ids.append(_through_the_ai_sdk_adapter(api))
    thread_ids += _through_every_import_format(api, team.alpha)
    failed_runs = list(
        Run.objects.filter(thread_id__in=thread_ids, status=RunStatus.FAILED).values_list(
            "id", flat=True
        )
    )
    assert failed_run in failed_runs
    run_ids = list(Run.objects.filter(thread_id__in=thread_ids).values_list("id", flat=True))

    # Every way in stored the secret, in each of the places redaction must clean.
    before = columns_holding(SECRET)
    assert {
        "transcripts_event.data",
        "transcripts_message.parts",
        "transcripts_message.metadata",
        "transcripts_message.search",
        "transcripts_run.usage",
        "transcripts_run.error",
        "transcripts_run.snapshot",
        "transcripts_thread.title",
    } <= set(before), before
    for thread_id in thread_ids:
        reads = _api_reads(api, thread_id)
        assert SECRET in "".join(reads.values()), thread_id
        assert Message.objects.filter(thread_id=thread_id, parts__icontains=SECRET).exists()
    assert SECRET in _streamed(live_server_asgi, token, failed_run)

    for message in Message.objects.filter(thread_id__in=thread_ids).order_by("thread", "depth"):
        moderation.redact_message(user=team.owner, message=message, reason="a leaked secret")
    for run_id in failed_runs:
        run = Run.objects.get(pk=run_id)
        moderation.redact_run(user=team.owner, run=run, reason="a leaked secret")

    assert columns_holding(SECRET) == {}
    for thread_id in thread_ids:
        for name, body in _api_reads(api, thread_id).items():
            assert SECRET not in body.lower(), name
    for run_id in run_ids:
        replay = _streamed(live_server_asgi, token, run_id)
        assert SECRET not in replay.lower(), run_id


# --- what follows a message, and titles made from one ----------------------------------------
#
# The probe's shapes: content the run holds outside its messages (after the last one, between
# two), a tool message answering the redacted one's call, an OpenTelemetry span's error
# status, and titles every path makes from a first message too long or too many lines for the
# old rule. Only the messages that hold the secret are redacted, one by one.

QUESTION = {"role": "user", "parts": [{"type": "text", "text": "What is the answer?"}]}
ANSWER: list[tuple[str, dict[str, Any]]] = [
    ("message-start", {"role": "assistant"}),
    ("text-delta", {"delta": f"the answer {SECRET}"}),
    ("message-end", {}),
]
# A first message whose title holds the secret, though the old rule (first line cut at 79 and
# an ellipsis) did not recognise it: long, on many lines.
LONG_FIRST = f"Tell me about {SECRET}  and  " + "many other words " * 8 + "\nand a second line"

TRAILING_SHAPES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "error after": [*ANSWER, ("error", {"message": f"trailing {SECRET}"})],
    "data-* after": [*ANSWER, ("data-note", {"n": SECRET})],
    "system.* after": [*ANSWER, ("system.log", {"n": [SECRET]})],
    "annotation in the message": [
        *ANSWER[:2],
        ("data-note", {"n": SECRET}),
        ANSWER[2],
    ],
    "tool result after": [
        *ANSWER[:2],
        ("tool-call", {"toolCallId": "call-t", "toolName": "lookup", "input": {}}),
        ANSWER[2],
        ("tool-result", {"toolCallId": "call-t", "output": {"found": SECRET}}),
    ],
    "between messages": [
        *ANSWER,
        ("error", {"message": f"between {SECRET}", "code": "E1"}),
        ("data-note", {"n": SECRET}),
        ("system.log", {"n": SECRET}),
        ("message-start", {"role": "assistant"}),
        ("text-delta", {"delta": "a later answer"}),
        ("message-end", {}),
    ],
}


def _trailing_thread(api: ApiClient, shape: str) -> str:
    thread_id = _new_thread(api, shape)
    run_id = _begin_run(api, thread_id)
    events = _numbered(("message", QUESTION), *TRAILING_SHAPES[shape])
    assert api.post(f"/runs/{run_id}/events", events).status_code == 200
    assert api.post(f"/runs/{run_id}/commit").status_code == 200
    return thread_id


def _through_otlp(token: str) -> str:
    """A conversation sent as a span whose status is an error holding the secret."""
    span = chat(
        trace="5b8efff798038103d269b633813fc60c",
        span_id="eee19b7ec3c1b174",
        inputs=[text("user", LONG_FIRST)],
        outputs=[text("assistant", f"an answer with {SECRET}")],
        conversation="conv-redaction",
    )
    span.status.code = Status.STATUS_CODE_ERROR
    span.status.message = f"the provider said {SECRET}"
    response = Client().post(
        "/api/v1/otlp/v1/traces",
        request(span).SerializeToString(),
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.content
    return str(Thread.objects.get(external_id="conv-redaction").pk)


def _through_chat(api: ApiClient) -> str:
    message = {"id": "m-1", "role": "user", "parts": [{"type": "text", "text": LONG_FIRST}]}
    payload = {"id": "chat-redaction", "messages": [message], "trigger": "submit-message"}
    response = api.post("/chat", {**payload, "parameters": {"delayMs": 0}})
    assert response.status_code == 200, response.content
    return str(Thread.objects.get(external_id="chat-redaction").pk)


def _through_new_thread(team: Team) -> str:
    form = {"title": "", "text": LONG_FIRST, "choice": "demo:demo-1"}
    response = team.client(team.owner).post("/new/", form)
    assert response.status_code == 302, response.content
    # Sent to /t/<id>/#run-<id>.
    return str(response["Location"]).split("#")[0].strip("/").split("/")[-1]


def _through_an_import(project: Project) -> str:
    document = {"messages": [{"role": "user", "content": LONG_FIRST}]}
    (thread_id,) = interchange.import_data(document, "openai", project=project).thread_ids
    return thread_id


def _page_reads(team: Team, thread_id: str) -> dict[str, str]:
    """The HTML pages that show the thread: its page, the list, a share link's page, and the
    admin lists of its threads, messages, runs and events."""
    owner, root = team.client(team.owner), team.client(team.superuser)
    _, secret = create_share(thread=Thread.objects.get(pk=thread_id), user=team.owner)
    pages = {
        "conversation": owner.get(f"/t/{thread_id}/"),
        "thread list": owner.get("/"),
        "share page": Client().get(f"/s/{secret}/"),
    }
    for model in ("thread", "message", "run", "event"):
        pages[f"admin {model}s"] = root.get(f"/admin/transcripts/{model}/")
    for name, response in pages.items():
        assert response.status_code == 200, (name, response.status_code)
    return {name: response.content.decode() for name, response in pages.items()}


def _searches_finding(team: Team, api: ApiClient) -> set[str]:
    """The searches for the secret that find something: the API's, the thread list's, the
    admin's lists (a search shows the query it ran, so its results are what counts)."""
    found = set()
    if api.get("/threads", q=SECRET).json()["threads"]:
        found.add("api")
    listed = team.client(team.owner).get("/", {"q": SECRET})
    if 'href="/t/' in listed.content.decode():
        found.add("thread list")
    for model in ("thread", "message", "run", "event"):
        page = team.client(team.superuser).get(f"/admin/transcripts/{model}/", {"q": SECRET})
        assert page.status_code == 200, model
        if "0 results" not in page.content.decode():
            found.add(f"admin {model}s")
    return found


def test_what_follows_a_message_and_titles_made_from_one_leave_with_it(
    team: Team, live_server_asgi: LiveServer
) -> None:
    token = team.token(team.alpha, "ingest", "read")
    api = ApiClient(token)
    shapes = {shape: _trailing_thread(api, shape) for shape in TRAILING_SHAPES}
    shapes["OTLP error status"] = _through_otlp(token)
    titles = {
        "chat": _through_chat(api),
        "OTLP": shapes["OTLP error status"],
        "new thread": _through_new_thread(team),
        "import": _through_an_import(team.alpha),
    }
    for path, thread_id in titles.items():
        assert SECRET in Thread.objects.get(pk=thread_id).title, path
    thread_ids = sorted({*shapes.values(), *titles.values()})
    # The replay of a closed run ends; the answers chat and New thread queued never start.
    closed = Run.objects.filter(thread_id__in=thread_ids).exclude(status=RunStatus.QUEUED)
    run_ids = list(closed.values_list("id", flat=True))
    # Before: every shape's secret in the reads of its thread and the replay of its run.
    for thread_id in thread_ids:
        assert SECRET in "".join(_api_reads(api, thread_id).values()), thread_id
    for shape, thread_id in shapes.items():
        (run_id,) = Run.objects.filter(thread_id=thread_id).values_list("id", flat=True)
        assert SECRET in _streamed(live_server_asgi, token, run_id), shape
    assert {"api", "thread list", "admin messages"} <= _searches_finding(team, api)

    holding = Message.objects.filter(thread_id__in=thread_ids, parts__icontains=SECRET)
    assert holding.filter(role="user").exists() and holding.filter(role="assistant").exists()
    for message in holding.exclude(role="tool").order_by("thread", "depth"):
        message.refresh_from_db()
        moderation.redact_message(user=team.owner, message=message, reason="a leaked secret")

    assert columns_holding(SECRET) == {}
    for thread_id in thread_ids:
        for name, body in _api_reads(api, thread_id).items():
            assert SECRET not in body.lower(), (thread_id, name)
        for name, body in _page_reads(team, thread_id).items():
            assert SECRET not in body.lower(), (thread_id, name)
    assert _searches_finding(team, api) == set()
    for run_id in run_ids:
        assert SECRET not in _streamed(live_server_asgi, token, run_id).lower(), run_id


# --- the worker vacuums what a redaction rewrote -----------------------------------------------


def _flush_statistics() -> None:
    """Send this connection's pending table statistics now (they go at most once a second)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _dead_rows() -> dict[str, int]:
    """The dead row versions of the tables a redaction rewrites, as the statistics say."""
    _flush_statistics()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [list(REDACTED_TABLES)],
        )
        return dict(cursor.fetchall())


def test_the_sweep_after_a_redaction_leaves_no_dead_rows_and_vacuums_once(team: Team) -> None:
    thread = make_thread(f"{SECRET} please", project=team.alpha)
    run = make_run(
        thread,
        user_message(f"{SECRET} please"),
        ("message-start", {"role": "assistant"}),
        ("text-delta", {"delta": SECRET}),
        ("message-end", {}),
        ("error", {"message": SECRET}),
    )
    sweep()  # a database never vacuumed by hand is vacuumed once
    assert sweep().vacuumed == []  # no redaction since
    for message in run.messages.order_by("position"):
        moderation.redact_message(user=team.owner, message=message, reason="a leaked secret")
    dead = _dead_rows()
    assert all(dead[table] > 0 for table in REDACTED_TABLES), dead

    assert sweep().vacuumed == list(REDACTED_TABLES)
    assert _dead_rows() == dict.fromkeys(REDACTED_TABLES, 0)
    assert sweep().vacuumed == []  # nothing dead is left: no second VACUUM
    assert columns_holding(SECRET) == {}

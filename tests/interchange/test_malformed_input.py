"""Malformed files of every kind, through the API and the CLI: a clear 4xx, nothing written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.factories import conversation
from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import Event, Message, Run, Thread

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
CANONICAL_HEAD = b'{"format":"transcripts.message_schema","version":1,"thread":{"title":"x"},'


def _rows() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Thread, Run, Event, Message))


def _chatgpt_with_a_broken_second_conversation() -> bytes:
    document = json.loads((FIXTURES / "chatgpt_conversations.json").read_text())
    assert len(document) >= 2
    for node in document[1]["mapping"].values():
        content = (node.get("message") or {}).get("content") or {}
        if content.get("content_type") == "text" and content.get("parts"):
            content["parts"][0] = "NUL \u0000 here"
            break
    else:
        raise AssertionError("no text message in the second conversation")
    return json.dumps(document).encode()


MALFORMED: list[tuple[str, str | None, bytes]] = [
    ("empty file", None, b""),
    ("empty file, format named", "chatgpt", b""),
    ("blank file", "openai", b" \n\t "),
    ("broken JSON", None, b'{"messages": [1, 2'),
    ("not UTF-8", None, '{"messages": [{"role": "user", "content": "é"}]}'.encode("latin-1")),
    ("huge integer", None, b'[{"role": "user", "content": 1' + b"0" * 5000 + b"}]"),
    ("huge integer in a ChatGPT export", "chatgpt", b'[{"mapping": 1' + b"0" * 5000 + b"}]"),
    ("nested too deeply", None, b"[" * 100_000 + b"]" * 100_000),
    ("raw NUL byte", None, b'[{"role": "user", "content": "a\x00b"}]'),
    ("escaped NUL", "openai", b'[{"role": "user", "content": "a\\u0000b"}]'),
    ("lone surrogate", "openai", b'[{"role": "user", "content": "\\ud800"}]'),
    ("NaN", "openai", b'[{"role": "user", "content": NaN}]'),
    ("wrong types", "canonical", CANONICAL_HEAD + b'"messages": 3}'),
    ("wrong role", "openai", b'[{"role": "wizard", "content": "hi"}]'),
    ("empty Anthropic body", "anthropic", b"{}"),
    ("empty Gemini body", "gemini", b"{}"),
    ("scalar", None, b"42"),
    ("unknown format key", "docx", b"[]"),
    ("export-only format key", "markdown", b"[]"),
    ("undetectable", None, b'{"hello": "world"}'),
    (
        "NUL in a run field",
        "canonical",
        CANONICAL_HEAD + b'"messages":[],"runs":[{"generator":"\\u0000"}]}',
    ),
    ("ChatGPT export broken in its second conversation", None, b""),  # filled below
]
MALFORMED[-1] = (MALFORMED[-1][0], None, _chatgpt_with_a_broken_second_conversation())


@pytest.mark.parametrize(("case", "fmt", "body"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_the_api_refuses_malformed_files_with_a_4xx_and_writes_nothing(
    case: str, fmt: str | None, body: bytes
) -> None:
    conversation(turns=1)
    _, token = issue_token(project=default_project(), name="t", scopes=("ingest", "read"))
    client = Client(raise_request_exception=False)
    before = _rows()
    query = f"?format={fmt}" if fmt else ""
    response = client.post(
        "/api/v1/imports" + query,
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert 400 <= response.status_code < 500, (case, response.status_code, response.content)
    error: dict[str, Any] = response.json()["error"]
    assert error["message"]
    assert _rows() == before


@pytest.mark.parametrize(("case", "fmt", "body"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_the_cli_refuses_malformed_files_with_an_error_and_writes_nothing(
    case: str, fmt: str | None, body: bytes, tmp_path: Path
) -> None:
    source = tmp_path / "input.json"
    source.write_bytes(body)
    before = _rows()
    args = [str(source)] + (["--format", fmt] if fmt else [])
    with pytest.raises((CommandError, SystemExit)):
        call_command("import_transcripts", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert _rows() == before


def test_a_broken_chatgpt_export_says_which_conversation() -> None:
    from transcripts import interchange
    from transcripts.errors import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        interchange.import_stream(
            io.BytesIO(_chatgpt_with_a_broken_second_conversation()), project=default_project()
        )
    assert refused.value.message.startswith("conversation 1:")
    assert refused.value.details["problems"][0]["path"].startswith("$[1].")
    assert Thread.objects.count() == 0


def test_the_cli_says_when_the_file_is_missing_or_a_folder(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_transcripts", str(tmp_path / "nope.json"), stdout=io.StringIO())
    with pytest.raises(CommandError, match="not a file"):
        call_command("import_transcripts", str(tmp_path), stdout=io.StringIO())


def test_export_to_an_unwritable_place_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    thread = conversation(turns=1)
    with pytest.raises(CommandError, match="cannot write"):
        call_command(
            "export_thread",
            thread.id,
            "-o",
            str(tmp_path / "missing" / "x.json"),
            stderr=io.StringIO(),
        )


def test_every_threadprotocol_violation_comes_back_in_one_422_with_its_path() -> None:
    _, token = issue_token(project=default_project(), name="t", scopes=("ingest", "read"))
    document = json.loads((FIXTURES / "threadprotocol_example.json").read_text())
    thread = document[0] if isinstance(document, list) else document
    thread["version"] = "0.9"
    actions = thread["actions"]
    actions[1]["sequence"] = actions[0]["sequence"]
    actions[4]["agent_id"] = "nobody-registered"
    actions[-1]["action_type"] = "NotSnakeCase"
    response = Client().post(
        "/api/v1/imports?format=threadprotocol",
        json.dumps(document),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 422
    paths = {p["path"] for p in response.json()["error"]["details"]["problems"]}
    prefix = "$[0]" if isinstance(document, list) else "$"
    assert {f"{prefix}.version", f"{prefix}.actions[1].sequence"} <= paths
    assert f"{prefix}.actions[4].agent_id" in paths
    assert f"{prefix}.actions[{len(actions) - 1}].action_type" in paths
    assert Thread.objects.count() == 0


def test_json_lines_that_are_not_utf8_are_a_clear_refusal() -> None:
    from transcripts.errors import InvalidInput
    from transcripts.interchange.imports import parse_document

    utf16 = '{"a":"é"}\n{"b":1}\n'.encode("utf-16-le")
    with pytest.raises(InvalidInput, match="not UTF-8 JSON"):
        parse_document(utf16)

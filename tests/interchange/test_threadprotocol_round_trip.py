"""ThreadProtocol through the database: import then export gives back the same document,
every branch travels as JSON Lines, and the ids we mint are UUIDs."""

from __future__ import annotations

import io
import itertools
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from hypothesis import HealthCheck, given, settings

from tests.base import Team
from tests.factories import ask, make_run, make_thread, say
from tests.formats.threadprotocol_strategies import threadprotocol_threads
from transcripts import interchange
from transcripts.errors import Conflict, InvalidInput
from transcripts.formats.document import leaves
from transcripts.formats.threadprotocol_read import TITLE_KEPT
from transcripts.ids import ulid_to_uuid, uuid_to_ulid
from transcripts.ledger.projects import create_project
from transcripts.ledger.threads import MAX_TITLE
from transcripts.models import Message, Project, Thread
from transcripts.selectors import active_path

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
EXAMPLE = json.loads((FIXTURES / "threadprotocol_example.json").read_text())
JSON_LINES = "application/x-ndjson"
_projects = itertools.count()


def exported(thread_id: str, **options: Any) -> Any:
    """The thread's ThreadProtocol export, parsed."""
    file = interchange.export_thread(Thread.objects.get(pk=thread_id), "threadprotocol", **options)
    return json.loads(file.content)


def imported(document: Any, project: Project) -> list[str]:
    """The ids of the threads an import of document into project created."""
    return interchange.import_data(document, "threadprotocol", project=project).thread_ids


def same_json(left: Any, right: Any) -> bool:
    """Whether two JSON values are equal, numbers compared as numbers: PostgreSQL's jsonb
    gives 5.2e+16 back as 52000000000000000, the same JSON number spelled otherwise."""

    def numeric(value: Any) -> Any:
        return json.loads(json.dumps(value), parse_float=Decimal, parse_int=Decimal)

    return bool(numeric(left) == numeric(right))


def api(team: Team, project: Project | None = None) -> Client:
    """An API client with a read and ingest token of project (alpha by default)."""
    token = team.token(project or team.alpha)
    return Client(headers={"Authorization": f"Bearer {token}"})


def branched_thread(project: Project) -> Thread:
    """question → two answers (the second active), then a follow-up with a tool call."""
    thread = make_thread("Branches", project=project)
    ask(thread, "question")
    prompt = Message.objects.get(thread=thread, depth=0)
    say(thread, "first answer")
    say(thread, "second answer", fork_from=prompt.id)
    ask(thread, "follow-up")
    make_run(
        thread,
        ("reasoning", {"text": "thinking", "signature": "sig"}),
        ("tool-call", {"toolCallId": "c1", "toolName": "search", "input": {"q": "x"}}),
        ("tool-result", {"toolCallId": "c1", "output": {"hits": 1}, "isError": False}),
        ("text-delta", {"delta": "done"}),
    )
    thread.refresh_from_db()
    return thread


def lines_of(response: Any) -> list[Any]:
    """The JSON values of a streamed JSON Lines response."""
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in text.splitlines()]


def test_the_spec_example_comes_back_identical(team: Team) -> None:
    (thread_id,) = imported(EXAMPLE, team.alpha)
    # The document's UUID is the thread's id, in ULID form.
    assert thread_id == uuid_to_ulid(EXAMPLE["thread_id"])
    assert exported(thread_id) == EXAMPLE


def test_the_example_comes_back_identical_through_the_api(team: Team) -> None:
    client = api(team)
    raw = json.dumps(EXAMPLE)
    created = client.post("/api/v1/imports", raw, content_type="application/octet-stream")
    assert created.status_code == 201
    (thread_id,) = created.json()["threadIds"]
    response = client.get(f"/api/v1/threads/{thread_id}/export?format=threadprotocol")
    assert response.status_code == 200
    assert json.loads(response.getvalue()) == EXAMPLE


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(document=threadprotocol_threads(max_actions=8))
def test_export_of_import_is_the_document_through_the_database(
    team: Team, document: dict[str, Any]
) -> None:
    project = create_project(slug=f"tp-{next(_projects)}", name="ThreadProtocol")
    (thread_id,) = imported(document, project)
    assert same_json(exported(thread_id), document)


def test_a_document_imported_twice_into_one_project_is_refused(team: Team) -> None:
    (first,) = imported(EXAMPLE, team.alpha)
    before = Thread.objects.count()
    with pytest.raises(Conflict) as refused:
        imported(EXAMPLE, team.alpha)
    # The answer never names the thread that holds it (it may be hidden from the importer).
    assert "already imported" in str(refused.value) and first not in str(refused.value)
    assert "threadId" not in refused.value.details and Thread.objects.count() == before
    response = api(team).post(
        "/api/v1/imports", json.dumps(EXAMPLE), content_type="application/octet-stream"
    )
    assert response.status_code == 409
    assert Thread.objects.count() == before


def test_another_project_gets_its_own_thread_that_exports_the_same_document(team: Team) -> None:
    (first,) = imported(EXAMPLE, team.alpha)
    (second,) = imported(EXAMPLE, team.beta)
    assert second != first
    assert exported(second) == EXAMPLE
    # And beta now holds it: a third import is refused there too.
    with pytest.raises(Conflict):
        imported(EXAMPLE, team.beta)


def test_a_long_title_comes_back_whole(team: Team) -> None:
    assert TITLE_KEPT == MAX_TITLE
    document = {**EXAMPLE, "title": "t" * 700}
    (thread_id,) = imported(document, team.alpha)
    assert len(Thread.objects.get(pk=thread_id).title) == MAX_TITLE
    assert exported(thread_id) == document


def test_ids_we_mint_are_uuids_holding_our_ulids(team: Team) -> None:
    thread = branched_thread(team.alpha)
    document = exported(thread.id)
    assert document["thread_id"] == ulid_to_uuid(thread.id)
    ids = [action["action_id"] for action in document["actions"]]
    assert all(uuid_to_ulid(value) is not None for value in ids) and len(set(ids)) == len(ids)
    path = active_path(thread)
    assert ids[0] == ulid_to_uuid(path[0].id)
    assert "#" not in json.dumps(document)
    # Back in an empty project, the document gives the same thread: ids, messages and all.
    before = [(m.id, m.role, m.parts) for m in path]
    Thread.objects.filter(pk=thread.pk).delete()
    (again,) = imported(document, team.alpha)
    assert again == thread.id
    assert [(m.id, m.role, m.parts) for m in active_path(Thread.objects.get(pk=again))] == before


def test_every_branch_exports_as_json_lines_and_reimports_as_the_same_tree(team: Team) -> None:
    thread = branched_thread(team.alpha)
    url = f"/api/v1/threads/{thread.id}/export?format=threadprotocol&branches=all"
    response = api(team).get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(JSON_LINES)
    assert response["Content-Disposition"].endswith('.jsonl"')
    main, child = lines_of(response)
    assert main == exported(thread.id)
    assert "parent_thread_id" not in main and child["parent_thread_id"] == main["thread_id"]
    assert child["metadata"]["fork_from_action_id"] == main["actions"][0]["action_id"]
    assert [a["content"].strip() for a in child["actions"]] == ["question", "first answer"]

    raw = "".join(json.dumps(line) + "\n" for line in (main, child))
    created = api(team, team.beta).post(
        "/api/v1/imports", raw, content_type="application/octet-stream"
    )
    assert created.status_code == 201
    (copy_id,) = created.json()["threadIds"]
    copy = Thread.objects.get(pk=copy_id)
    tree = interchange.thread_tree(copy)
    original = interchange.thread_tree(thread)
    assert len(tree.messages) == len(original.messages)
    assert len(leaves(tree)) == len(leaves(original)) == 2
    assert [m.parts for m in active_path(copy)] == [m.parts for m in active_path(thread)]
    again = api(team, team.beta).get(
        f"/api/v1/threads/{copy_id}/export?format=threadprotocol&branches=all"
    )
    assert lines_of(again) == [main, child]


def test_json_lines_that_are_not_json_say_which_line(team: Team) -> None:
    raw = json.dumps(EXAMPLE) + "\n{not json\n"
    response = api(team).post("/api/v1/imports", raw, content_type="application/octet-stream")
    assert response.status_code == 422
    assert "line 2" in response.json()["error"]["message"]


def test_branches_all_is_only_for_threadprotocol(team: Team) -> None:
    thread = branched_thread(team.alpha)
    with pytest.raises(InvalidInput):
        interchange.export_thread(thread, "openai", branches="all")
    client = api(team)
    base = f"/api/v1/threads/{thread.id}/export"
    assert client.get(f"{base}?format=canonical&branches=all").status_code == 422
    assert client.get(f"{base}?format=threadprotocol&branches=some").status_code == 422


def test_an_outsider_gets_no_branches(team: Team) -> None:
    thread = branched_thread(team.alpha)
    url = f"/api/v1/threads/{thread.id}/export?format=threadprotocol&branches=all"
    assert api(team, team.beta).get(url).status_code == 404
    assert team.client(team.outsider).get(url).status_code == 404


def test_the_conversation_offers_every_branch_as_json_lines(team: Team) -> None:
    thread = branched_thread(team.alpha)
    html = team.client(team.viewer).get(f"/t/{thread.id}/").content.decode()
    link = f"/api/v1/threads/{thread.id}/export?format=threadprotocol&amp;branches=all"
    assert link in html
    download = team.client(team.viewer).get(link.replace("&amp;", "&"))
    assert download.status_code == 200
    assert len(lines_of(download)) == 2


def test_a_redacted_message_exports_without_its_content_and_still_validates(team: Team) -> None:
    from transcripts.formats.threadprotocol import import_threadprotocol
    from transcripts.ledger.moderation import redact_message

    (thread_id,) = imported(EXAMPLE, team.alpha)
    thread = Thread.objects.get(pk=thread_id)
    answer = next(m for m in active_path(thread) if m.role == "assistant")
    redact_message(user=team.owner, message=answer, reason="secret")
    document = exported(thread_id)
    assert "Let me check" not in json.dumps(document)
    assert import_threadprotocol(document)
    # The other messages keep their actions as they came (numbered on from what is left).
    assert document["actions"][0] == EXAMPLE["actions"][0]
    last = {**document["actions"][-1], "sequence": EXAMPLE["actions"][-1]["sequence"]}
    assert last == EXAMPLE["actions"][-1]


def test_the_command_line_writes_every_branch_as_json_lines(team: Team) -> None:
    thread = branched_thread(team.alpha)
    out = io.StringIO()
    call_command(
        "export_thread", thread.id, "--format", "threadprotocol", "--branches", "all", stdout=out
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0] == exported(thread.id) and lines[1]["parent_thread_id"]


def test_json_lines_nested_too_deeply_are_refused_with_a_4xx(team: Team) -> None:
    raw = json.dumps(EXAMPLE) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"
    response = api(team).post("/api/v1/imports", raw, content_type="application/octet-stream")
    assert response.status_code == 422
    assert "line 2" in response.json()["error"]["message"]

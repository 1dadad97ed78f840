"""Experiments over the API (issue 29): made from ids, a tag or a filter, once per
Idempotency-Key; read with their progress and summary; results as JSON pages and as CSV and
JSON Lines streamed (parsed back to the same rows); pause, resume, cancel, adopt, discard and
judge; who may do what; bad input refused with nothing queued."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.api.conftest import ApiClient, error_of
from tests.factories import conversation
from tests.generation.support import drain_experiment as _drain
from transcripts.ledger.default_project import default_project
from transcripts.ledger.organise import tag_thread
from transcripts.ledger.projects import create_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import (
    AuditRecord,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    Membership,
    Message,
    ProjectRole,
    Run,
    RunRating,
    RunStatus,
    Thread,
)

pytestmark = pytest.mark.django_db(transaction=True)
FAST = {"delayMs": 0}


def _body(**kwargs: Any) -> dict[str, Any]:
    return {"name": "brief answers", "model": "demo-brief", "parameters": FAST, **kwargs}


def _member(role: str, name: str) -> ApiClient:
    """A browser session of a member of the default project with role."""
    user = get_user_model().objects.create_user(name, password="pw-123456789")
    Membership.objects.create(user=user, project=default_project(), role=role)
    client = Client()
    client.force_login(user)
    return ApiClient(client=client)


def _made(api: ApiClient, **body: Any) -> dict[str, Any]:
    response = api.post("/experiments", _body(**body))
    assert response.status_code == 201, response.content
    made: dict[str, Any] = response.json()
    return made


@pytest.fixture
def threads() -> list[Thread]:
    return [conversation(turns=2, title=f"support {i}") for i in range(3)]


@pytest.fixture
def finished(api: ApiClient, threads: list[Thread]) -> dict[str, Any]:
    """An experiment on the three threads, run to the end."""
    made = _made(api, threadIds=[t.id for t in threads], evaluators=[{"type": "exact-match"}])
    _drain(made["id"])
    return made


def test_an_experiment_made_from_ids_runs_and_shows_progress_and_summary(api, threads):
    made = _made(api, threadIds=[t.id for t in threads], evaluators=[{"type": "exact-match"}])
    assert made["status"] == "running"
    assert made["itemCount"] == 3 and made["forkRule"] == "last-user"
    assert made["progress"]["total"] == 3 and made["progress"]["queued"] == 3
    assert made["source"] == {"threadIds": 3}

    _drain(made["id"])
    shown = api.get(f"/experiments/{made['id']}").json()

    assert shown["status"] == "completed" and shown["finishedAt"]
    assert shown["progress"]["done"] == 3
    summary = shown["summary"]
    assert summary["unjudged"] == 3 and summary["winRate"]["total"] == 0
    assert summary["metrics"]["candidate"]["length"]["count"] == 3
    assert summary["metrics"]["baseline"]["length"]["mean"] > 0
    [rates] = summary["evaluators"]
    assert rates["name"] == "exact-match" and rates["candidate"]["total"] == 3
    assert 0 <= rates["candidate"]["low"] <= rates["candidate"]["high"] <= 1
    listed = api.get("/experiments").json()["experiments"]
    assert [e["id"] for e in listed] == [made["id"]]
    audit = AuditRecord.objects.get(action="create_experiment")
    assert audit.details["via"] == "api"


def test_experiments_come_from_a_tag_and_a_filter(api):
    tagged = [conversation(turns=1, title=f"refund {i}") for i in range(2)]
    other = conversation(turns=1, title="shipping")
    for thread in tagged:
        tag_thread(thread=thread, user=None, tag="refunds")

    by_tag = _made(api, tag="refunds")
    by_filter = _made(api, filter="q=shipping")

    assert {i.thread_id for i in ExperimentItem.objects.filter(experiment_id=by_tag["id"])} == {
        t.id for t in tagged
    }
    assert [i.thread_id for i in ExperimentItem.objects.filter(experiment_id=by_filter["id"])] == [
        other.id
    ]
    assert by_tag["source"] == {"tag": "refunds"}


def test_the_idempotency_key_makes_one_experiment(api, threads):
    body = _body(threadIds=[threads[0].id])
    headers = {"Idempotency-Key": "nightly-1"}
    first = api.client.post(
        "/api/v1/experiments",
        json.dumps(body),
        content_type="application/json",
        headers={**api.headers, **headers},
    )
    again = api.client.post(
        "/api/v1/experiments",
        json.dumps({**body, "name": "another name"}),
        content_type="application/json",
        headers={**api.headers, **headers},
    )

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Experiment.objects.count() == 1
    assert Run.objects.filter(metadata__experiment=first.json()["id"]).count() == 1


def _state() -> tuple[int, int, int]:
    return (
        Experiment.objects.count(),
        Run.objects.filter(status=RunStatus.QUEUED).count(),
        AuditRecord.objects.count(),
    )


def test_bad_input_is_a_422_and_queues_nothing(api, threads):
    thread = threads[0]
    stranger = Message.objects.filter(thread=threads[1]).first()
    assert stranger is not None
    cases = [
        (_body(threadIds=[thread.id], model="gpt-9"), "model"),
        (_body(filter="q=nothing-matches-this"), "threads"),
        (_body(tag="no-such-tag"), "threads"),
        (_body(threadIds=[f"{i:026d}" for i in range(10_001)]), "threads"),
        (_body(forkRule="message", forks={thread.id: stranger.id}), "forks"),
        (_body(threadIds=[thread.id], evaluators=[{"type": "astrology"}]), "evaluators"),
        (_body(threadIds=[thread.id], concurrency=0), "concurrency"),
        (_body(threadIds=[thread.id], forkRule="sideways"), None),
        (_body(threadIds=["not-an-id"]), "threads"),
        ({"threadIds": [thread.id]}, None),
    ]
    before = _state()

    for body, field in cases:
        response = api.post("/experiments", body)
        assert response.status_code == 422, (body, response.content[:300])
        if field is not None:
            assert error_of(response)["details"]["field"] == field, response.content
    assert _state() == before


def test_results_as_json_csv_and_jsonl_are_the_same_rows(api, finished, threads):
    path = f"/experiments/{finished['id']}/results"
    page = api.get(path).json()
    rows = page["rows"]
    assert page["total"] == 3 and page["pages"] == 1 and len(rows) == 3
    assert [r["threadId"] for r in rows] == [t.id for t in threads]
    first = rows[0]
    assert first["status"] == "done" and first["candidateRunId"] and first["baselineRunId"]
    assert first["baselineText"].strip() == "answer 1" and first["candidateText"]
    assert first["candidateLength"] == len(first["candidateText"])
    assert first["evaluations"][0]["name"] == "exact-match"

    jsonl = api.get(path, format="jsonl")
    assert jsonl.status_code == 200 and jsonl.streaming
    assert jsonl["Content-Disposition"].startswith("attachment;")
    lines = b"".join(jsonl.streaming_content).decode().splitlines()
    assert [json.loads(line) for line in lines] == rows

    exported = api.get(path, format="csv")
    assert exported.status_code == 200 and exported.streaming
    assert exported["Content-Type"].startswith("text/csv")
    assert exported["Content-Disposition"].startswith("attachment;")
    parsed = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert len(parsed) == 3
    for line, row in zip(parsed, rows, strict=True):
        assert line["itemId"] == str(row["itemId"])
        assert line["candidateText"] == row["candidateText"]
        assert float(line["candidateLength"]) == row["candidateLength"]
        assert line["disagreement"] == str(row["disagreement"]).lower()
        assert line["adoptedAt"] == "" and line["error"] == ""
        passed = row["evaluations"][0]["passed"]
        assert line["exact-match.passed"] == ("true" if passed else "false")
        assert "evaluations" not in line


def test_results_filter_sort_page_and_refuse_a_bad_format(api, finished):
    path = f"/experiments/{finished['id']}/results"
    by_length = api.get(path, sort="-baseline-length", pageSize=2).json()
    assert by_length["pages"] == 2 and len(by_length["rows"]) == 2
    second = api.get(path, sort="-baseline-length", pageSize=2, page=2).json()
    assert len(second["rows"]) == 1
    assert api.get(path, status="failed").json()["total"] == 0
    assert api.get(path, outcome="unjudged").json()["total"] == 3

    empty = api.get(path, format="csv", status="failed")
    lines = b"".join(empty.streaming_content).decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("position,itemId,threadId,")
    assert lines[0].endswith(",adoptedAt,exact-match.passed")

    for params, field in [
        ({"format": "xml"}, "format"),
        ({"sort": "shoe-size"}, "sort"),
        ({"status": "sleeping"}, "status"),
    ]:
        response = api.get(path, **params)
        assert response.status_code == 422, response.content
        assert error_of(response)["details"]["field"] == field


def test_pause_resume_and_cancel(api, threads):
    made = _made(api, threadIds=[t.id for t in threads], concurrency=1)
    base = f"/experiments/{made['id']}"

    paused = api.post(f"{base}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    _drain(made["id"])  # the one started finishes; nothing new starts
    assert api.get(base).json()["progress"] == {
        **api.get(base).json()["progress"],
        "done": 1,
        "pending": 2,
        "queued": 0,
    }
    resumed = api.post(f"{base}/resume").json()
    assert resumed["status"] == "running" and resumed["progress"]["queued"] == 1
    cancelled = api.post(f"{base}/cancel").json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["progress"]["cancelled"] == 2 and cancelled["progress"]["done"] == 1

    again = api.post(f"{base}/pause")
    assert again.status_code == 409


def test_adopt_the_winners_judged_by_a_person_and_discard(api, finished, threads):
    editor = _member(ProjectRole.EDITOR, "ed")
    base = f"/experiments/{finished['id']}"
    items = list(ExperimentItem.objects.filter(experiment_id=finished["id"]).order_by("position"))

    judged = editor.post(f"{base}/items/{items[0].pk}/judge", {"verdict": "b"})
    assert judged.status_code == 200, judged.content
    assert judged.json() == {"itemId": items[0].pk, "outcome": "win", "personOutcome": "win"}
    assert RunRating.objects.filter(run_id=items[0].run_id, preferred=True).exists()
    assert editor.post(f"{base}/items/{items[1].pk}/judge", {"verdict": "a"}).status_code == 200
    summary = api.get(base).json()["summary"]
    assert (summary["wins"], summary["losses"], summary["unjudged"]) == (1, 1, 1)

    by_token = api.post(f"{base}/items/{items[2].pk}/judge", {"verdict": "t"})
    assert by_token.status_code == 403
    assert "person" in error_of(by_token)["message"]

    adopted = api.post(f"{base}/adopt", {"winners": True}).json()
    assert adopted == {"adopted": [items[0].pk], "skipped": []}
    thread = Thread.objects.get(pk=items[0].thread_id)
    assert Message.objects.get(pk=thread.head_id).run_id == items[0].run_id
    assert api.post(f"{base}/adopt", {}).status_code == 422

    discarded = api.post(f"{base}/discard", {})
    assert discarded.json() == {"status": "completed", "deleted": 0}
    assert api.post(f"{base}/discard", {"delete": True}).status_code == 403
    admin = ApiClient(_admin_token())
    deleted = admin.post(f"{base}/discard", {"delete": True}).json()
    assert deleted["deleted"] == 2  # the adopted candidate is on the active path: it stays
    assert Run.objects.filter(pk=items[0].run_id).exists()
    assert not Run.objects.filter(pk=items[1].run_id).exists()


def _admin_token() -> str:
    return issue_token(project=default_project(), name="admin", scopes=["admin"])[1]


def test_who_may_do_what(api, reader, make_token, finished, threads):
    base = f"/experiments/{finished['id']}"
    item = ExperimentItem.objects.filter(experiment_id=finished["id"]).first()
    assert item is not None
    writes = [
        ("/experiments", _body(threadIds=[threads[0].id])),
        (f"{base}/pause", None),
        (f"{base}/resume", None),
        (f"{base}/cancel", None),
        (f"{base}/adopt", {"winners": True}),
        (f"{base}/discard", {}),
    ]
    reads = ["/experiments", base, f"{base}/results", f"{base}/results?format=csv"]

    # A reader token reads, and may not write.
    for path in reads:
        assert reader.get(path).status_code == 200, path
    for path, body in writes:
        response = reader.post(path, body)
        assert response.status_code == 403, (path, response.content)
    # An ingest-only token may not read, nor make an experiment (that needs read too).
    ingest = ApiClient(make_token("ingest"))
    assert ingest.get(base).status_code == 403
    assert ingest.post("/experiments", _body(threadIds=[threads[0].id])).status_code == 403
    # A viewer's session reads; may not write.
    viewer = _member(ProjectRole.VIEWER, "vi")
    assert viewer.get(f"/experiments?project={default_project().slug}").status_code == 200
    assert viewer.get(f"{base}/results").status_code == 200
    made = viewer.post(
        "/experiments", _body(project=default_project().slug, threadIds=[threads[0].id])
    )
    assert made.status_code == 403
    assert viewer.post(f"{base}/items/{item.pk}/judge", {"verdict": "a"}).status_code == 403
    assert Experiment.objects.count() == 1
    # An editor's session makes one in the project it names.
    editor = _member(ProjectRole.EDITOR, "ed")
    by_editor = editor.post(
        "/experiments", _body(project=default_project().slug, threadIds=[threads[0].id])
    )
    assert by_editor.status_code == 201, by_editor.content


def test_a_session_write_needs_its_csrf_token(threads):
    user = get_user_model().objects.create_user("ed", password="pw-123456789")
    Membership.objects.create(user=user, project=default_project(), role=ProjectRole.EDITOR)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    body = _body(project=default_project().slug, threadIds=[threads[0].id])

    response = client.post("/api/v1/experiments", json.dumps(body), content_type="application/json")

    assert response.status_code == 403
    assert "CSRF" in error_of(response)["message"]
    assert not Experiment.objects.exists()


def test_another_projects_token_and_junk_ids_get_404_everywhere(make_token, finished):
    elsewhere = create_project(slug="elsewhere")
    outsider = ApiClient(make_token("read", "ingest", "admin", project=elsewhere))
    item = ExperimentItem.objects.filter(experiment_id=finished["id"]).first()
    assert item is not None
    base = f"/experiments/{finished['id']}"
    posts = [
        (f"{base}/pause", None),
        (f"{base}/resume", None),
        (f"{base}/cancel", None),
        (f"{base}/adopt", {"winners": True}),
        (f"{base}/discard", {"delete": True}),
        (f"{base}/items/{item.pk}/judge", {"verdict": "b"}),
    ]
    before = (ExperimentItem.objects.order_by("pk").values_list("status", "outcome").first(),)

    for path in [base, f"{base}/results", f"{base}/results?format=jsonl"]:
        assert outsider.get(path).status_code == 404, path
    for path, body in posts:
        response = outsider.post(path, body)
        assert response.status_code == 404, (path, response.content)
        assert error_of(response)["code"] == "not_found"
    assert outsider.get("/experiments").json() == {"experiments": []}
    assert outsider.get(f"/experiments?project={default_project().slug}").status_code == 404
    assert (ExperimentItem.objects.order_by("pk").values_list("status", "outcome").first(),) == (
        before
    )
    assert Experiment.objects.get().status == ExperimentStatus.COMPLETED

    owner = ApiClient(make_token("read", "ingest", "admin"))
    for junk in ["nope", "0" * 26, "01J0000000000000000000000A"]:
        assert owner.get(f"/experiments/{junk}").status_code == 404
    for junk in ["x", "0", "99999999999999999999", str(item.pk + 10_000)]:
        response = owner.post(f"{base}/items/{junk}/judge", {"verdict": "a"})
        assert response.status_code == 404, (junk, response.content)


def test_a_hidden_threads_answers_are_left_out_without_the_admin_scope(reader, finished, threads):
    Thread.objects.filter(pk=threads[0].id).update(hidden=True)
    path = f"/experiments/{finished['id']}/results"

    rows = reader.get(path).json()["rows"]
    lines = reader.get(path, format="jsonl")
    admin_rows = ApiClient(_admin_token()).get(path).json()["rows"]

    assert rows[0]["baselineText"] is None and rows[0]["candidateText"] is None
    assert rows[0]["threadTitle"] == ""
    assert rows[1]["candidateText"]
    first_line = json.loads(b"".join(lines.streaming_content).decode().splitlines()[0])
    assert first_line["candidateText"] is None
    assert admin_rows[0]["threadTitle"] == "support 0" and admin_rows[0]["candidateText"]


def test_fork_rules_message_and_each_user(api, threads):
    answer = Message.objects.filter(thread=threads[0], role="assistant").order_by("depth")[0]

    by_message = _made(api, forkRule="message", forks={threads[0].id: answer.id})
    each = _made(api, forkRule="each-user", threadIds=[threads[1].id])

    [item] = ExperimentItem.objects.filter(experiment_id=by_message["id"])
    assert item.fork_from_id == answer.parent_id and item.baseline_ids == [answer.id]
    users = Message.objects.filter(thread=threads[1], role="user").values_list("id", flat=True)
    forks = ExperimentItem.objects.filter(experiment_id=each["id"]).values_list(
        "fork_from_id", flat=True
    )
    assert sorted(forks) == sorted(users) and each["itemCount"] == 2


def test_a_member_of_another_project_gets_404(finished):
    elsewhere = create_project(slug="elsewhere")
    user = get_user_model().objects.create_user("out", password="pw-123456789")
    Membership.objects.create(user=user, project=elsewhere, role=ProjectRole.ADMIN)
    client = Client()
    client.force_login(user)
    outsider = ApiClient(client=client)
    item = ExperimentItem.objects.filter(experiment_id=finished["id"]).first()
    assert item is not None
    base = f"/experiments/{finished['id']}"

    assert outsider.get(base).status_code == 404
    assert outsider.get(f"{base}/results?format=csv").status_code == 404
    assert outsider.post(f"{base}/cancel").status_code == 404
    assert outsider.post(f"{base}/items/{item.pk}/judge", {"verdict": "b"}).status_code == 404
    assert outsider.get(f"/experiments?project={default_project().slug}").status_code == 404
    made = outsider.post("/experiments", _body(project=default_project().slug, tag="x"))
    assert made.status_code == 404
    assert Experiment.objects.get().status == ExperimentStatus.COMPLETED
    assert not RunRating.objects.exists()


def test_a_csv_cell_a_spreadsheet_would_run_as_a_formula_is_quoted(api):
    from tests.factories import ask, make_thread, say

    thread = make_thread('=HYPERLINK("http://evil.example")')
    ask(thread, "what is one plus one")
    say(thread, "=1+1 is two")
    made = _made(api, threadIds=[thread.id])
    _drain(made["id"])
    path = f"/experiments/{made['id']}/results"
    exported = api.get(path, format="csv")
    [line] = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert line["threadTitle"] == '\'=HYPERLINK("http://evil.example")'
    assert line["baselineText"].startswith("'=1+1")
    # JSON Lines keeps the text as it is.
    [row] = [
        json.loads(x)
        for x in b"".join(api.get(path, format="jsonl").streaming_content).splitlines()
    ]
    assert row["baselineText"].startswith("=1+1")

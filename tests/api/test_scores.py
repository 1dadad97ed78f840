"""POST/GET/DELETE /api/v1/scores and GET/POST /api/v1/score-configs (issue 28): who may call
them, each refusal (a 4xx that stores nothing), externalId idempotence and the pages."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts.ledger import moderation, scores
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import Message, Score, ScoreConfig

pytestmark = pytest.mark.django_db


def _answer(team: Team, project: Any = None) -> Message:
    thread = make_thread("Scored", project=project or team.alpha)
    ask(thread, "Is it raining?")
    return last_message(say(thread, "No."))


def _client(team: Team, *scopes: str, project: Any = None) -> ApiClient:
    return ApiClient(team.token(project or team.alpha, *scopes))


def _helpfulness(team: Team, **spec: Any) -> ScoreConfig:
    return scores.create_score_config(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=ConfigSpec("helpfulness", spec.pop("data_type", "numeric"), **spec),
    )


def test_an_ingest_token_scores_a_message_a_run_and_a_thread(team: Team) -> None:
    answer = _answer(team)
    agent = _client(team, "ingest")
    on_message = agent.post("/scores", {"messageId": answer.id, "name": "tone", "label": "dry"})
    on_run = agent.post("/scores", {"runId": answer.run_id, "name": "latency", "value": 0.4})
    on_thread = agent.post(
        "/scores",
        {"threadId": answer.thread_id, "name": "solved", "value": 1, "source": "evaluator",
         "comment": "closed the ticket"},
    )  # fmt: skip

    assert [r.status_code for r in (on_message, on_run, on_thread)] == [201, 201, 201]
    body = on_thread.json()
    assert (body["targetType"], body["threadId"], body["source"], body["author"]) == (
        "thread", answer.thread_id, "evaluator", "test"
    )  # fmt: skip
    assert on_message.json()["messageId"] == answer.id and on_message.json()["runId"] is None
    assert on_run.json()["targetType"] == "run"
    assert Score.objects.count() == 3


def test_a_repeated_external_id_updates_instead_of_adding(team: Team) -> None:
    answer = _answer(team)
    agent = _client(team, "ingest")
    body = {"messageId": answer.id, "name": "helpfulness", "value": 2, "externalId": "run-7"}
    first = agent.post("/scores", body)
    again = agent.post("/scores", {**body, "value": 3})

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert list(Score.objects.values_list("value", "external_id")) == [(3.0, "run-7")]


@pytest.mark.parametrize(
    ("config", "body", "field"),
    [
        ({"min_value": 1, "max_value": 5}, {"value": 7}, "value"),
        ({"min_value": 1, "max_value": 5}, {"label": "great"}, "label"),
        ({"data_type": "categorical", "labels": ("pass", "fail")}, {"label": "meh"}, "label"),
        ({"data_type": "boolean"}, {"value": 0.5}, "value"),
        ({"writers": "people"}, {"value": 1}, "source"),
        ({}, {"value": "high"}, "value"),
        ({}, {"value": 1, "comment": "x" * 2001}, "comment"),
    ],
)
def test_a_score_its_config_refuses_is_a_422_naming_the_field(
    team: Team, config: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    answer = _answer(team)
    _helpfulness(team, **config)
    response = _client(team, "ingest").post(
        "/scores", {"messageId": answer.id, "name": "helpfulness", **body}
    )
    assert response.status_code == 422, response.json()
    error = error_of(response)
    problems = error["details"].get("problems") or [{}]
    assert field in (error["details"].get("field"), problems[0].get("path")), error
    assert not Score.objects.exists()


def test_a_name_with_no_config_is_a_422_when_the_project_requires_configs(team: Team) -> None:
    answer = _answer(team)
    scores.set_scores_need_config(project=team.alpha, user=team.owner, required=True)
    response = _client(team, "ingest").post("/scores", {"threadId": answer.thread_id,
                                                        "name": "tone", "value": 1})  # fmt: skip
    assert response.status_code == 422
    assert error_of(response)["details"]["field"] == "name"
    assert not Score.objects.exists()


@pytest.mark.parametrize(
    "targets",
    [{}, {"messageId": "m", "threadId": "t"}],
    ids=["none", "two"],
)
def test_a_score_names_exactly_one_target(team: Team, targets: dict[str, str]) -> None:
    answer = _answer(team)
    body = {k: answer.id if k == "messageId" else answer.thread_id for k in targets}
    response = _client(team, "ingest").post("/scores", {**body, "name": "x", "value": 1})
    assert response.status_code == 422
    assert error_of(response)["details"]["field"] == "messageId"
    assert not Score.objects.exists()


def test_another_projects_objects_answer_as_unknown_ids(team: Team) -> None:
    answer = _answer(team)
    own = _client(team, "admin")
    score = own.post("/scores", {"messageId": answer.id, "name": "x", "value": 1}).json()
    beta = _client(team, "admin", project=team.beta)
    for target in ({"messageId": answer.id}, {"runId": answer.run_id},
                   {"threadId": answer.thread_id}):  # fmt: skip
        response = beta.post("/scores", {**target, "name": "x", "value": 1})
        assert response.status_code == 404, target
        query = {"threadId": answer.thread_id} if "threadId" in target else target
        assert beta.get("/scores", **query).status_code == 404
    assert beta.request("DELETE", f"/scores/{score['id']}").status_code == 404
    assert beta.get("/scores").json()["scores"] == []
    assert own.request("DELETE", "/scores/01JB8ZT6QK5X4V3N2M1P0R9S8T").status_code == 404
    assert Score.objects.count() == 1


def test_a_hidden_thread_takes_scores_only_from_an_admin_token(team: Team) -> None:
    answer = _answer(team)
    moderation.hide_thread(user=team.moderator, thread=answer.thread, reason="check")
    body = {"messageId": answer.id, "name": "x", "value": 1}
    assert _client(team, "ingest", "read").post("/scores", body).status_code == 404
    assert _client(team, "admin").post("/scores", body).status_code == 201


def test_scopes_ingest_posts_read_lists_admin_deletes_and_configures(team: Team) -> None:
    answer = _answer(team)
    ingest_only, read_only = _client(team, "ingest"), _client(team, "read")
    both, admin = _client(team, "ingest", "read"), _client(team, "admin")
    body = {"messageId": answer.id, "name": "x", "value": 1}
    score = ingest_only.post("/scores", body).json()

    assert read_only.post("/scores", body).status_code == 403
    assert ingest_only.get("/scores").status_code == 403
    assert ingest_only.get("/scores", threadId=answer.thread_id).status_code == 403
    assert ingest_only.get("/score-configs").status_code == 403
    assert [s["id"] for s in read_only.get("/scores").json()["scores"]] == [score["id"]]
    assert both.request("DELETE", f"/scores/{score['id']}").status_code == 403
    config = {"name": "helpfulness", "dataType": "numeric", "min": 1, "max": 5}
    assert both.post("/score-configs", config).status_code == 403
    assert Score.objects.count() == 1 and not ScoreConfig.objects.exists()

    assert admin.request("DELETE", f"/scores/{score['id']}").status_code == 204
    created = admin.post("/score-configs", config)
    assert created.status_code == 201 and created.json()["max"] == 5
    assert not Score.objects.exists()
    listed = read_only.get("/score-configs").json()
    assert [c["name"] for c in listed["configs"]] == ["helpfulness"]
    assert listed["scoresNeedConfig"] is False


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"name": "helpfulness", "dataType": "numeric", "min": 5, "max": 1}, 422, "min"),
        ({"name": "pass", "dataType": "categorical", "labels": []}, 422, "labels"),
        ({"name": "pass", "dataType": "ordinal"}, 422, None),
        ({"name": "", "dataType": "boolean"}, 422, "name"),
        ({"name": "helpfulness", "dataType": "boolean"}, 409, "name"),
    ],
)
def test_a_config_refused_stores_nothing(
    team: Team, body: dict[str, Any], status: int, field: str | None
) -> None:
    _helpfulness(team)
    response = _client(team, "admin").post("/score-configs", body)
    assert response.status_code == status, response.json()
    if field is not None:
        assert error_of(response)["details"]["field"] == field
    assert ScoreConfig.objects.count() == 1


def test_scores_are_listed_by_thread_run_message_and_name_a_page_at_a_time(team: Team) -> None:
    answer, other = _answer(team), _answer(team)
    agent, reader = _client(team, "ingest"), _client(team, "read")
    for value in (1, 2, 3):
        agent.post("/scores", {"messageId": answer.id, "name": "a", "value": value})
    agent.post("/scores", {"runId": answer.run_id, "name": "b", "value": 1})
    agent.post("/scores", {"threadId": other.thread_id, "name": "a", "value": 9})

    def values(**query: Any) -> list[float]:
        return [s["value"] for s in reader.get("/scores", **query).json()["scores"]]

    assert values(threadId=answer.thread_id) == [1, 2, 3, 1]
    assert values(messageId=answer.id) == [1, 2, 3]
    assert values(runId=answer.run_id) == [1]
    assert values(name="a") == [1, 2, 3, 9]
    first = reader.get("/scores", name="a", limit=3).json()
    rest = reader.get("/scores", name="a", limit=3, cursor=first["nextCursor"]).json()
    assert [s["value"] for s in rest["scores"]] == [9] and rest["nextCursor"] is None
    assert reader.get("/scores", cursor="nonsense").status_code == 422


def test_a_browser_session_reads_its_projects_configs_and_scores(team: Team) -> None:
    _helpfulness(team)
    viewer = ApiClient(client=team.client(team.viewer))
    outsider = ApiClient(client=team.client(team.outsider))
    assert viewer.get("/score-configs", project="alpha").status_code == 200
    assert outsider.get("/score-configs", project="alpha").status_code == 404
    assert viewer.get("/scores").status_code == 200
    assert viewer.post("/score-configs", {"name": "x", "dataType": "boolean"}).status_code == 403


def test_an_admin_token_archives_its_projects_config_and_no_other(team: Team) -> None:
    config = _helpfulness(team)
    assert (
        _client(team, "ingest", "read").post(f"/score-configs/{config.pk}/archive").status_code
        == 403
    )
    beta = _client(team, "admin", project=team.beta)
    assert beta.post(f"/score-configs/{config.pk}/archive").status_code == 404
    config.refresh_from_db()
    assert config.archived_at is None
    archived = _client(team, "admin").post(f"/score-configs/{config.pk}/archive")
    assert archived.status_code == 200 and archived.json()["archivedAt"] is not None
    assert _client(team, "admin").post("/score-configs/999999/archive").status_code == 404

"""The API's quotas: requests and events a minute per token and per project, counted in
PostgreSQL; past one, 429 with Retry-After (and RetryInfo for OTLP protobuf exports)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from google.rpc import error_details_pb2, status_pb2

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.otel.spans import chat, request, text
from transcripts.errors import InvalidInput, PermissionDenied
from transcripts.ledger.quotas import set_project_limits
from transcripts.models import AuditRecord, Project, RateWindow

pytestmark = pytest.mark.django_db
OTLP = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"


def within_one_minute(seconds: float) -> None:
    """Wait for the database's next minute unless seconds are left in this one: a count that
    crossed into a new minute would start again."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 60 - extract(second FROM clock_timestamp())")
        left = float(cursor.fetchone()[0])
    if left < seconds:
        time.sleep(left + 0.05)


@pytest.fixture(autouse=True)
def _one_minute() -> None:
    within_one_minute(5)


def spans(count: int) -> bytes:
    """An OTLP protobuf export of count chat spans."""
    return request(
        *(
            chat(
                trace="5b8efff798038103d269b633813fc60c",
                span_id=f"{index + 1:016x}",
                inputs=[text("user", "Hi")],
                outputs=[text("assistant", "Hello")],
                conversation="limits",
            )
            for index in range(count)
        )
    ).SerializeToString()


def assert_throttled(response: Any, *, limit: int, scope: str) -> None:
    assert response.status_code == 429, response.content[:300]
    assert 1 <= int(response["Retry-After"]) <= 60
    error = error_of(response)
    assert error["code"] == "throttled"
    assert error["details"]["limit"] == limit
    assert error["details"]["scope"] == scope
    assert error["details"]["retryAfter"] == int(response["Retry-After"])


def test_a_project_limit_is_honoured_and_other_projects_are_not_touched(team: Team) -> None:
    set_project_limits(
        project=team.alpha, requests_per_minute=3, events_per_minute=None, actor=team.owner
    )
    first, second = ApiClient(team.token(team.alpha, "read")), ApiClient(team.token(team.alpha))
    assert [first.get("/threads").status_code for _ in range(2)] == [200, 200]
    assert second.get("/threads").status_code == 200
    assert_throttled(second.get("/threads"), limit=3, scope="project")
    assert_throttled(first.get("/threads"), limit=3, scope="project")
    assert ApiClient(team.token(team.beta, "read")).get("/threads").status_code == 200


def test_a_token_limit_comes_from_the_settings(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_TOKEN_REQUESTS_PER_MINUTE = 2
    client = ApiClient(team.token(team.alpha, "read"))
    assert [client.get("/threads").status_code for _ in range(2)] == [200, 200]
    assert_throttled(client.get("/threads"), limit=2, scope="token")
    # Another token of the same project has its own count.
    assert ApiClient(team.token(team.alpha, "read")).get("/threads").status_code == 200


def test_a_new_minute_starts_the_count_again(team: Team) -> None:
    Project.objects.filter(pk=team.alpha.pk).update(requests_per_minute=1)
    client = ApiClient(team.token(team.alpha, "read"))
    assert client.get("/threads").status_code == 200
    assert client.get("/threads").status_code == 429
    # The minute is over: every counter's window is in the past.
    for window in RateWindow.objects.all():
        RateWindow.objects.filter(pk=window.pk).update(
            window_start=window.window_start - timedelta(minutes=1)
        )
    assert client.get("/threads").status_code == 200


def test_no_limit_when_the_limits_are_off(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_RATE_LIMITS = False
    Project.objects.filter(pk=team.alpha.pk).update(requests_per_minute=0)
    assert ApiClient(team.token(team.alpha, "read")).get("/threads").status_code == 200
    assert not RateWindow.objects.exists()


def test_a_browser_session_and_a_bad_token_are_not_counted(team: Team) -> None:
    Project.objects.filter(pk=team.alpha.pk).update(requests_per_minute=0)
    browser = Client()
    browser.force_login(team.editor)
    assert browser.get("/api/v1/threads").status_code == 200
    assert ApiClient("not-a-token").get("/threads").status_code == 401
    assert not RateWindow.objects.exists()


def test_otlp_spans_count_as_events_and_protobuf_gets_retry_info(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE = 3
    token = team.token(team.alpha, "ingest")

    def export(count: int) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        return Client().post(OTLP, spans(count), content_type=PROTOBUF, headers=headers)

    assert export(2).status_code == 200
    refused = export(2)
    assert refused.status_code == 429
    assert refused["Content-Type"] == PROTOBUF
    status = status_pb2.Status.FromString(refused.content)
    assert status.code == 8  # RESOURCE_EXHAUSTED
    retry = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(retry)
    assert retry.retry_delay.seconds == int(refused["Retry-After"]) >= 1


def test_otlp_json_is_refused_in_the_api_error_shape(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_PROJECT_REQUESTS_PER_MINUTE = 0
    response = Client().post(
        OTLP,
        b"{}",
        content_type="application/json",
        headers={"Authorization": f"Bearer {team.token(team.alpha, 'ingest')}"},
    )
    assert_throttled(response, limit=0, scope="project")


def test_writes_are_counted_as_requests(api: ApiClient) -> None:
    thread = api.post("/threads", {"title": "t"}).json()
    run = api.post(f"/threads/{thread['id']}/runs", {}).json()
    window = RateWindow.objects.get(scope__startswith="project:")
    assert window.requests == 2
    assert run["id"]


def test_only_a_project_admin_sets_its_limits_and_it_is_audited(team: Team) -> None:
    with pytest.raises(PermissionDenied):
        set_project_limits(
            project=team.alpha, requests_per_minute=1, events_per_minute=1, actor=team.moderator
        )
    with pytest.raises(InvalidInput):
        set_project_limits(project=team.alpha, requests_per_minute=-1, events_per_minute=None)
    set_project_limits(
        project=team.alpha, requests_per_minute=100, events_per_minute=5000, actor=team.owner
    )
    team.alpha.refresh_from_db()
    assert (team.alpha.requests_per_minute, team.alpha.events_per_minute) == (100, 5000)
    record = AuditRecord.objects.get(action="set_limits")
    assert record.details == {"requestsPerMinute": 100, "eventsPerMinute": 5000}


def test_appended_events_count_against_the_events_a_minute(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE = 3
    api = ApiClient(team.token(team.alpha, "ingest", "read"))
    thread = api.post("/threads", {"title": "t"}).json()
    run = api.post(f"/threads/{thread['id']}/runs", {}).json()
    batch = [{"seq": seq, "kind": "text-delta", "data": {"delta": "x"}} for seq in (1, 2)]
    assert api.post(f"/runs/{run['id']}/events", {"events": batch}).status_code == 200
    more = [{"seq": seq, "kind": "text-delta", "data": {"delta": "x"}} for seq in (3, 4)]
    refused = api.post(f"/runs/{run['id']}/events", {"events": more})
    assert_throttled(refused, limit=3, scope="token")
    # Nothing of the refused batch was stored.
    reader = ApiClient(team.token(team.alpha, "read"))
    assert [e["seq"] for e in reader.get(f"/runs/{run['id']}/events").json()["events"]] == [1, 2]

"""A single-event append is one statement after the token's and the events' charge: the
caller's reach is checked in the statement that stores the event (for a larger batch, in the
statement that locks its run), and what it does not reach is refused as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.api.conftest import ApiClient, error_of
from tests.api.test_limits import within_one_minute
from tests.factories import events, make_run, make_thread
from transcripts.models import Event, Project, RateWindow, Run, Thread

# Outside a test transaction, as in production: the one-statement append is autocommitted
# (inside a transaction the ledger takes its full path).
pytestmark = pytest.mark.django_db(transaction=True)


def _append(client: ApiClient, run: Run, seq: int = 1) -> Any:
    batch = events(("text-delta", {"delta": "token"}), start=seq)
    return client.post(f"/runs/{run.id}/events", {"events": batch})


def test_an_append_costs_the_token_lookup_with_its_charge_and_one_statement(api):
    run = make_run(make_thread(), commit=False)
    assert _append(api, run).status_code == 200  # the token's last use is recorded once

    with CaptureQueriesContext(connection) as queries:
        response = _append(api, run, seq=2)

    assert response.status_code == 200
    assert response.json() == {"lastSeq": 2, "accepted": 1, "duplicates": 0}
    statements = [q["sql"] for q in queries.captured_queries]
    # The token lookup with the request's quota charge, then the append with its events'
    # charge (one upsert each, see docs/access.md): two statements.
    assert len(statements) == 2, [sql[:80] for sql in statements]
    assert "transcripts_apitoken" in statements[0]
    assert "transcripts_ratewindow" in statements[0]
    assert "transcripts_ratewindow" in statements[1]
    assert "transcripts_event" in statements[1]
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2]


def test_a_large_batch_locks_its_run_without_looking_it_up_first(api):
    run = make_run(make_thread(), commit=False)
    batch = events(*[("text-delta", {"delta": f"t{n}"}) for n in range(100)])

    with CaptureQueriesContext(connection) as queries:
        response = api.post(f"/runs/{run.id}/events", {"events": batch})

    assert response.status_code == 200, response.content
    assert response.json() == {"lastSeq": 100, "accepted": 100, "duplicates": 0}
    statements = [q["sql"] for q in queries.captured_queries]
    # No query of the run before its lock: the lock's statement checks the reach.
    assert not any(sql.lstrip().startswith('SELECT "transcripts_run"') for sql in statements), [
        sql[:80] for sql in statements
    ]
    assert Event.objects.filter(run=run).count() == 100


@pytest.mark.parametrize("size", [1, 100])
def test_an_outsider_hears_404_whatever_it_sends(make_token: Callable[..., str], size: int):
    other = Project.objects.create(slug="elsewhere", name="Elsewhere")
    run = make_run(make_thread(), commit=False)
    client = ApiClient(make_token("ingest", "read", project=other))
    # Events the ledger refuses (a kind it does not know), then good ones.
    bad = events(*[("no-such-kind", {}) for _ in range(size)])
    good = events(*[("text-delta", {"delta": "x"}) for _ in range(size)])

    for batch in (bad, good):
        response = client.post(f"/runs/{run.id}/events", {"events": batch})
        assert (response.status_code, error_of(response)["code"]) == (404, "not_found")
    assert not Event.objects.filter(run_id=run.id).exists()


@pytest.mark.parametrize("size", [1, 100])
def test_an_insider_hears_what_is_wrong_with_its_events(api, size: int):
    run = make_run(make_thread(), commit=False)
    bad = events(*[("no-such-kind", {}) for _ in range(size)])

    response = api.post(f"/runs/{run.id}/events", {"events": bad})

    assert response.status_code == 422, response.content
    assert not Event.objects.filter(run_id=run.id).exists()


def test_a_run_of_another_project_does_not_exist_for_the_token(
    make_token: Callable[..., str],
):
    other = Project.objects.create(slug="elsewhere", name="Elsewhere")
    run = make_run(make_thread(), commit=False)

    response = _append(ApiClient(make_token("ingest", "read", project=other)), run)

    assert (response.status_code, error_of(response)["code"]) == (404, "not_found")
    assert not Event.objects.filter(run_id=run.id).exists()


def test_a_hidden_thread_takes_an_admin_token(make_token: Callable[..., str]):
    run = make_run(make_thread(), commit=False)
    Thread.objects.filter(pk=run.thread_id).update(hidden=True)

    refused = _append(ApiClient(make_token("ingest", "read")), run)
    assert refused.status_code == 404
    assert not Event.objects.filter(run_id=run.id).exists()

    admitted = _append(ApiClient(make_token("ingest", "admin")), run)
    assert admitted.status_code == 200, admitted.content
    assert Event.objects.filter(run_id=run.id).count() == 1


def test_a_token_without_the_ingest_scope_is_refused(reader):
    run = make_run(make_thread(), commit=False)

    response = _append(reader, run)

    assert (response.status_code, error_of(response)["details"]["scope"]) == (403, "ingest")
    assert not Event.objects.filter(run_id=run.id).exists()


def _spent(scope: str) -> tuple[int, int]:
    window = RateWindow.objects.get(scope=scope)
    return window.requests, window.events


def test_events_past_the_limit_are_counted_and_not_stored(api, settings: Any):
    within_one_minute(5)
    settings.TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE = 3
    run = make_run(make_thread(), commit=False)
    assert _append(api, run).status_code == 200
    token_scope = next(
        s for s in RateWindow.objects.values_list("scope", flat=True) if "token" in s
    )

    batch = events(*[("text-delta", {"delta": "x"}) for _ in range(3)], start=2)
    refused = api.post(f"/runs/{run.id}/events", {"events": batch})

    assert (refused.status_code, error_of(refused)["details"]["scope"]) == (429, "token")
    assert error_of(refused)["details"]["limit"] == 3
    assert refused["Retry-After"]
    # Counted (1 + 3 events, 2 requests), as every refused request is; nothing stored.
    assert _spent(token_scope) == (2, 4)
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == [1]
    assert Run.objects.get(pk=run.id).last_seq == 1


def test_a_project_limit_is_kept_by_the_one_statement_append(make_token, settings: Any):
    within_one_minute(5)
    project = Project.objects.create(slug="small", name="Small", events_per_minute=2)
    client = ApiClient(make_token("ingest", "read", project=project))
    run = make_run(make_thread(project=project), commit=False)

    assert _append(client, run).status_code == 200
    assert _append(client, run, seq=2).status_code == 200
    refused = _append(client, run, seq=3)

    assert (refused.status_code, error_of(refused)["details"]["scope"]) == (429, "project")
    assert _spent(f"project:{project.pk}") == (3, 3)
    assert Event.objects.filter(run=run).count() == 2


def test_events_are_charged_once_when_the_statement_leaves_them_to_the_full_path(api):
    within_one_minute(5)
    run = make_run(make_thread(), commit=False)
    assert _append(api, run).status_code == 200
    token_scope = next(
        s for s in RateWindow.objects.values_list("scope", flat=True) if "token" in s
    )

    gap = _append(api, run, seq=5)  # the statement stores nothing; the full path says why
    resent = _append(api, run, seq=1)  # an exact re-send: a no-op
    many = api.post(
        f"/runs/{run.id}/events", {"events": events(*[("text-delta", {})] * 20, start=2)}
    )

    assert gap.status_code == 409
    assert resent.json() == {"lastSeq": 1, "accepted": 0, "duplicates": 1}
    assert many.status_code == 422  # an empty text delta, refused by the ledger's check
    assert _spent(token_scope) == (4, 1 + 1 + 1 + 20)

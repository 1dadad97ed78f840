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
from tests.factories import events, make_run, make_thread
from transcripts.models import Event, Project, Run, Thread

# Outside a test transaction, as in production: the one-statement append is autocommitted
# (inside a transaction the ledger takes its full path).
pytestmark = pytest.mark.django_db(transaction=True)


def _append(client: ApiClient, run: Run, seq: int = 1) -> Any:
    batch = events(("text-delta", {"delta": "token"}), start=seq)
    return client.post(f"/runs/{run.id}/events", {"events": batch})


def test_an_append_costs_the_token_lookup_with_its_charge_the_events_charge_and_one_statement(
    api,
):
    run = make_run(make_thread(), commit=False)
    assert _append(api, run).status_code == 200  # the token's last use is recorded once

    with CaptureQueriesContext(connection) as queries:
        response = _append(api, run, seq=2)

    assert response.status_code == 200
    assert response.json() == {"lastSeq": 2, "accepted": 1, "duplicates": 0}
    statements = [q["sql"] for q in queries.captured_queries]
    # The token lookup and the request's quota charge in one statement, the events' charge
    # (one upsert, see docs/access.md), and the append itself in one statement.
    assert len(statements) == 3, [sql[:80] for sql in statements]
    assert "transcripts_apitoken" in statements[0]
    assert "transcripts_ratewindow" in statements[0]
    assert "transcripts_ratewindow" in statements[1]
    assert "transcripts_event" in statements[2]
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

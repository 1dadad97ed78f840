"""Admin lists count at most COUNT_LIMIT rows and estimate past it, so a page costs the same
whatever the size of the table."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.admin.conftest import conversation_in
from tests.base import Team
from transcripts.admin import paging
from transcripts.admin.paging import BoundedCountPaginator
from transcripts.models import AuditRecord, Event, Project

pytestmark = pytest.mark.django_db


def test_a_short_list_is_counted_exactly(team: Team) -> None:
    conversation_in(Project.objects.get(slug="alpha"), turns=2)
    events = Event.objects.order_by("run", "seq")
    assert BoundedCountPaginator(events, 2).count == events.count()


def test_a_long_list_is_counted_up_to_the_bound_then_estimated(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation_in(Project.objects.get(slug="alpha"), turns=3)
    monkeypatch.setattr(paging, "COUNT_LIMIT", 2)
    events = Event.objects.order_by("run", "seq")
    with CaptureQueriesContext(connection) as captured:
        count = BoundedCountPaginator(events, 2).count
    assert count >= 3
    counting = next(q["sql"] for q in captured if "COUNT(" in q["sql"].upper())
    assert "LIMIT 3" in counting
    assert any(q["sql"].startswith("EXPLAIN") for q in captured)


def test_the_thread_list_counts_messages_and_runs_of_each_thread(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation_in(Project.objects.get(slug="alpha"), turns=2, title="counted")
    client = Client()
    client.force_login(team.superuser)
    page = client.get(reverse("admin:transcripts_thread_changelist"))
    assert page.status_code == 200
    row = next(line for line in page.content.decode().split("<tr") if "counted" in line)
    assert '<td class="field-message_count">4</td>' in row
    assert '<td class="field-run_count">4</td>' in row


@pytest.mark.parametrize(
    ("model", "choice"),
    [("run", ""), ("message", "role__exact"), ("auditrecord", "action__exact")],
)
def test_filters_offer_recent_values_without_scanning_the_table(
    team: Team, model: str, choice: str
) -> None:
    thread = conversation_in(Project.objects.get(slug="alpha"), turns=2)
    AuditRecord.objects.create(
        action="hide", target_type="thread", target_id=thread.id, project=thread.project
    )
    client = Client()
    client.force_login(team.superuser)
    url = reverse(f"admin:transcripts_{model}_changelist")
    with CaptureQueriesContext(connection) as captured:
        page = client.get(url)
    assert page.status_code == 200
    # DISTINCT only over the latest rows (a LIMIT inside), never over the whole table.
    distinct = [q["sql"] for q in captured if "DISTINCT" in q["sql"]]
    assert all("LIMIT" in sql for sql in distinct)
    if choice:
        assert f"?{choice}=" in page.content.decode()


def test_a_recent_value_filters_the_list(team: Team) -> None:
    conversation_in(Project.objects.get(slug="alpha"), turns=1)
    client = Client()
    client.force_login(team.superuser)
    url = reverse("admin:transcripts_message_changelist")
    users = client.get(url, {"role__exact": "user"}).content.decode()
    assert "question 0" in users and "answer 0" not in users

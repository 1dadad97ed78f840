"""The recent threads beside a conversation: the project's latest, the open one marked."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.base import Team
from tests.factories import ask, make_thread
from transcripts.ledger import moderation

pytestmark = pytest.mark.django_db


def _sidebar(html: str) -> str:
    start = html.index('<aside class="recent-threads"')
    return html[start : html.index("</aside>", start)]


def test_the_sidebar_lists_the_project_s_latest_threads_the_open_one_marked(team: Team) -> None:
    older = make_thread("Older talk", project=team.alpha)
    opened = make_thread("The open one", project=team.alpha)
    ask(older, "bumped: now the most recent")
    make_thread("Beta's own", project=team.beta)
    html = team.client(team.viewer).get(f"/t/{opened.id}/").content.decode()
    sidebar = _sidebar(html)
    assert sidebar.index("Older talk") < sidebar.index("The open one")  # latest activity first
    assert f'class="recent-link is-open" href="/t/{opened.id}/" aria-current="page"' in sidebar
    assert f'class="recent-link" href="/t/{older.id}/"' in sidebar
    assert "Beta's own" not in sidebar
    assert "just now" in sidebar
    assert 'href="/new/"' in sidebar


def test_hidden_threads_are_beside_it_only_for_moderators(team: Team) -> None:
    opened = make_thread("Visible", project=team.alpha)
    hidden = make_thread("Hidden away", project=team.alpha)
    moderation.hide_thread(thread=hidden, user=team.moderator, reason="spam")
    assert "Hidden away" not in _sidebar(
        team.client(team.viewer).get(f"/t/{opened.id}/").content.decode()
    )
    assert "Hidden away" in _sidebar(
        team.client(team.moderator).get(f"/t/{opened.id}/").content.decode()
    )


def _queries(client: Any, url: str, **headers: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, headers=headers).status_code == 200
    return len(captured)


def test_the_sidebar_costs_one_query_whatever_the_number_of_threads(team: Team) -> None:
    opened = make_thread("Open", project=team.alpha)
    client = team.client(team.viewer)
    url = f"/t/{opened.id}/"
    few = _queries(client, url)
    for n in range(30):
        ask(make_thread(f"Thread {n}", project=team.alpha), f"question {n}")
    assert _queries(client, url) == few
    html = client.get(url).content.decode()
    assert _sidebar(html).count('class="recent-link') == 20


def _sidebar_queries(client: Any, url: str, **headers: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, headers=headers).status_code == 200
    return [
        q["sql"] for q in captured if 'ORDER BY "transcripts_thread"."updated_at" DESC' in q["sql"]
    ]


def test_htmx_fragments_of_the_conversation_leave_the_sidebar_out(team: Team) -> None:
    opened = make_thread("Open", project=team.alpha)
    client = team.client(team.viewer)
    url = f"/t/{opened.id}/"
    assert len(_sidebar_queries(client, url)) == 1
    assert _sidebar_queries(client, url, **{"HX-Request": "true"}) == []
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "recent-threads" not in fragment

"""The thread list's search hits: each listed thread's newest matching message, read from that
thread's messages only."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.base import Team
from tests.factories import make_thread, say
from transcripts.models import Message
from transcripts.selectors.threads import search_hits


def test_each_thread_s_newest_matching_message_is_its_hit(team: Team) -> None:
    first = make_thread("First", project=team.alpha)
    say(first, "the kestrel flew")
    say(first, "nothing to see")
    say(first, "a second kestrel landed")
    say(first, "and then quiet")
    second = make_thread("Second", project=team.alpha)
    say(second, "one kestrel only")
    titled = make_thread("Kestrel in the title", project=team.alpha)
    say(titled, "no bird here")
    elsewhere = make_thread("Elsewhere", project=team.beta)
    say(elsewhere, "a kestrel too")

    hits = search_hits([first.id, second.id, titled.id], "KESTREL")

    def newest_with(thread: object, word: str) -> str:
        return str(
            Message.objects.filter(thread=thread, parts__0__text__icontains=word)
            .order_by("-id")
            .values_list("id", flat=True)[0]
        )

    assert set(hits) == {first.id, second.id}
    assert hits[first.id].message_id == newest_with(first, "second kestrel")
    assert hits[second.id].message_id == newest_with(second, "kestrel")
    assert "kestrel" in hits[first.id].snippet.text.lower()


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]


def test_hits_are_read_thread_by_thread_never_from_the_full_text_index(team: Team) -> None:
    """The full-text index answers with every match of the store, and a phrase looks rare to
    the planner: at 2,000,000 messages it read all 4,039 matches of one, and ran ts_headline on
    each, for a page of 25 threads. The query is checked on rows read by thread, behind a
    fence (a subquery scan) that no plan can pass it through to an index."""
    listed = [make_thread(f"Listed {n}", project=team.alpha) for n in range(3)]
    for thread in listed:
        say(thread, "a message of a long thread")
    say(listed[0], "then reset the password and sign in")
    for n in range(5):
        say(make_thread(f"Other {n}", project=team.alpha), "reset the password again")
    with connection.cursor() as cursor:
        with CaptureQueriesContext(connection) as queries:
            hits = search_hits([t.id for t in listed], '"reset the password"')
        sql = next(q["sql"] for q in queries.captured_queries if "ts_headline" in q["sql"])
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        (raw,) = cursor.fetchone()
    nodes = _nodes((json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"])
    checked = [node for node in nodes if "@@" in node.get("Filter", "")]

    assert set(hits) == {listed[0].id}
    assert [node["Node Type"] for node in checked] == ["Subquery Scan"], nodes
    assert not any(
        "@@" in node.get(cond, "") for node in nodes for cond in ("Index Cond", "Recheck Cond")
    ), nodes

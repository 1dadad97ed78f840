"""The tree map page: labelled lines with a badge for every state, bounded at 1,000 branches."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread, say
from tests.support import read_where_joins_look_cheap
from transcripts import ledger
from transcripts.models import Message, Project, RunOrigin, Thread
from transcripts.web.presenters.tree_layout import MAX_ALTERNATIVES

pytestmark = pytest.mark.django_db


def _regenerated(project: Project, count: int) -> tuple[Thread, Message]:
    """A prompt answered count times (the last answer active)."""
    thread = make_thread(f"{count} answers", project=project)
    prompt = last_message(ask(thread, "Name a number"))
    for n in range(count):
        say(thread, f"Number {n} is my answer", fork_from=prompt.id)
    thread.refresh_from_db()
    return thread, prompt


def _get(client: Client, thread: Thread) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/t/{thread.id}/tree/")
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_every_line_has_a_label_a_preview_and_a_badge_for_its_state(team: Team) -> None:
    thread, prompt = _regenerated(team.alpha, 2)
    stopped = make_run(
        thread,
        ("text-delta", {"delta": "Half an ans"}),
        fork_from=prompt.id,
        commit=False,
        origin=RunOrigin.WEB,
    )
    ledger.stop_run(run=stopped)
    failed = make_run(thread, ("text-delta", {"delta": "x"}), fork_from=prompt.id, commit=False)
    ledger.fail_run(run=failed, error="boom")
    streaming = make_run(thread, ("text-delta", {"delta": "y"}), fork_from=prompt.id, commit=False)
    html, _ = _get(team.client(team.viewer), thread)
    rows = re.findall(r'<li class="tree-row[^"]*".*?</li>', html, flags=re.S)
    assert len(rows) == 6  # the prompt, three answers, two runs without messages
    prompt_row = rows[0]
    assert "is-active" in prompt_row and ">User<" in prompt_row
    assert "Name a number" in prompt_row and ">active</span>" in prompt_row
    # The stopped answer was kept as a branch, and made active (the user stopped to read it).
    assert any(
        "Half an ans" in r and ">active</span>" in r and ">stopped</span>" in r for r in rows
    )
    for n in (0, 1):
        assert any(f"Number {n} is my answer" in r and ">alternative</span>" in r for r in rows)
    assert any(f"/runs/{failed.id}/" in r and ">failed</span>" in r for r in rows)
    assert any(f"/runs/{streaming.id}/" in r and ">streaming</span>" in r for r in rows)
    # A small tree shows its fork points open, each with a link to compare its branches.
    assert '<details class="tree-branches" open>' in html
    assert f'href="/t/{thread.id}/fork/{prompt.id}/compare/"' in html


def test_fifty_branches_fold_below_their_fork_point(team: Team) -> None:
    thread, _ = _regenerated(team.alpha, 50)
    html, _ = _get(team.client(team.viewer), thread)
    assert html.count('class="tree-branch"') == 49
    assert "49 other branches here" in html
    assert '<details class="tree-branches">' in html and 'tree-branches" open' not in html
    assert "51 messages · 50 branches" in html


def test_a_thousand_branches_render_a_bounded_page_in_as_many_queries(team: Team) -> None:
    viewer = team.client(team.viewer)
    small, _ = _regenerated(team.alpha, 50)
    small_html, small_queries = _get(viewer, small)
    thread, prompt = _regenerated(team.alpha, 1000)
    html, queries = _get(viewer, thread)
    assert html.count('class="tree-branch"') == MAX_ALTERNATIVES
    assert f"{999 - MAX_ALTERNATIVES} more branches here, not listed" in html
    assert f'href="/t/{thread.id}/fork/{prompt.id}/compare/"' in html
    assert queries == small_queries
    # Bounded: about the size of the page of 50 branches, not 20 times it.
    assert len(html) < 1.1 * len(small_html)


def test_an_outsider_gets_404_and_a_viewer_reads_it(team: Team) -> None:
    thread, _ = _regenerated(team.alpha, 2)
    assert team.client(team.outsider).get(f"/t/{thread.id}/tree/").status_code == 404
    assert team.client(team.viewer).get(f"/t/{thread.id}/tree/").status_code == 200
    assert Client().get(f"/t/{thread.id}/tree/").status_code == 302


class _Tree(HTMLParser):
    """The tree map's ARIA tree: each treeitem with its attributes and the group it sits in,
    each group's id, and the roles of the lists in between."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.items: list[tuple[dict[str, str], str]] = []
        self.groups: dict[str, bool] = {}  # id: whether its <details> is open
        self.list_roles: set[str] = set()
        self.trees = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        inside = any(a.get("role") == "tree" for _, a in self.stack)
        self.trees += values.get("role") == "tree"
        if inside and tag in ("ol", "li"):
            self.list_roles.add(values.get("role", f"{tag} without a role"))
        if inside and tag == "details":
            self.groups[self.stack[-1][1]["id"]] = "open" in values
        if values.get("role") == "treeitem":
            groups = [a["id"] for _, a in self.stack if a.get("role") == "group"]
            self.items.append((values, groups[-1] if groups else ""))
        if tag not in ("rect", "svg"):
            self.stack.append((tag, values))

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("rect", "svg") and self.stack:
            self.stack.pop()


def test_the_tree_map_is_an_aria_tree_of_links_with_levels_and_states(team: Team) -> None:
    thread, prompt = _regenerated(team.alpha, 2)
    # The first message edited and answered: a "Start" line, the active path a new branch.
    edited = last_message(ask(thread, "Another prompt", fork_from=None))
    say(thread, "Another answer")
    thread.refresh_from_db()
    html, _ = _get(team.client(team.viewer), thread)
    tree = _Tree()
    tree.feed(html)
    assert tree.trees == 1 and '<ol class="tree-outline tree-root" role="tree"' in html
    # The lists in between have no semantics of their own (a tree holds lines and groups).
    assert tree.list_roles == {"none"}
    owners = {a["aria-owns"]: a for a, _ in tree.items if "aria-owns" in a}
    assert set(owners) == set(tree.groups) and len(owners) == 2
    for group, is_open in tree.groups.items():
        assert owners[group]["aria-expanded"] == ("true" if is_open else "false")
    for attrs, group in tree.items:
        siblings = [a for a, g in tree.items if g == group]
        assert attrs["aria-setsize"] == str(len(siblings))
        assert attrs["aria-posinset"] == str(siblings.index(attrs) + 1)
        level = int(owners[group]["aria-level"]) + 1 if group else 1
        assert attrs["aria-level"] == str(level)
    # Without JavaScript every line is a plain link, except the "Start" line that owns a fork.
    start, *lines = [a for a, _ in tree.items]
    assert "href" not in start and start["aria-owns"] and all(a.get("href") for a in lines)
    # The line the conversation shows is the selected one: the end of the active path.
    [shown] = [a for a in lines if a.get("aria-selected") == "true"]
    assert f"leaf={edited.id}" in shown["href"] and prompt.id not in shown["href"]
    assert html.count("on the </span>") == html.count('class="tag tag-active"') - 1  # legend


def test_each_message_s_run_is_looked_up_by_its_key_whatever_the_statistics(team: Team) -> None:
    """A hash join over every run of the store was the cheaper plan on stale statistics (a bulk
    load just done): 110 ms at 2,000,000 messages. The runs come by primary key instead."""
    from transcripts.selectors.paths import tree_rows

    thread, _ = _regenerated(team.alpha, 3)
    for n in range(5):
        say(make_thread(f"other {n}", project=team.alpha), "an answer elsewhere")
    rows, plan = read_where_joins_look_cheap(lambda: tree_rows(thread), "transcripts_run")
    assert len(rows) == Message.objects.filter(thread=thread).count() == 4
    assert "Index Cond: (id = m.run_id)" in plan, plan

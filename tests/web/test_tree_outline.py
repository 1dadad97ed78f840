"""The tree map's outline markup, written by the presenter: escaped, nested and worded as before."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import pytest

from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread, say
from transcripts import ledger
from transcripts.web.presenters.tree import TreeLine
from transcripts.web.presenters.tree_html import outline_html
from transcripts.web.presenters.tree_layout import Segment, TreeNode

pytestmark = pytest.mark.django_db

VOID = {"rect", "input", "meta", "link", "br", "img"}
ARIA_PLACE = re.compile(r'aria-level="(\d+)" aria-setsize="(\d+)" aria-posinset="(\d+)"')


class _Nesting(HTMLParser):
    """Checks that every element closes in order; records the text inside each `<summary>`."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.problems: list[str] = []
        self.summaries: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
            return
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if "summary" in self.open:
            self.summaries.append(data)


def _outline(team: Team, thread_id: str) -> str:
    response = team.client(team.viewer).get(f"/t/{thread_id}/tree/")
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index('<ol class="tree-outline tree-root"')
    return html[start : html.index("</section>", start)]


def test_previews_and_titles_are_escaped_in_the_outline(team: Team) -> None:
    thread = make_thread("<b>bold</b>", project=team.alpha)
    ask(thread, '<script>alert("x")</script> & more')
    html = _outline(team, thread.id)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in html


def test_the_outline_nests_forks_and_branches_and_words_single_counts(team: Team) -> None:
    thread = make_thread("Edited", project=team.alpha)
    first = last_message(ask(thread, "First try"))
    ask(thread, "Second try", fork_from=None)
    prompt = last_message(ask(thread, "Go on"))
    say(thread, "One answer", fork_from=prompt.id)
    say(thread, "Another answer", fork_from=prompt.id)
    failed = make_run(thread, ("text-delta", {"delta": "x"}), fork_from=prompt.id, commit=False)
    ledger.fail_run(run=failed, error="boom")
    html = _outline(team, thread.id)
    parser = _Nesting()
    parser.feed(html)
    assert parser.problems == [] and parser.open == []
    assert "1 other first message" in parser.summaries
    assert "2 other branches here" in parser.summaries
    assert f"?leaf={first.id}#m-{first.id}" in html
    # The failed run has no messages: a stub row, linked to its run, with its state.
    assert '<i class="stub-mark" aria-hidden="true">\N{MULTIPLICATION SIGN}</i>' in html
    assert f'href="/runs/{failed.id}/"' in html and "failed run, no messages" in html
    assert html.count("is-active") >= 2 and html.count("is-alternative") >= 2


def _segment(count: int) -> Segment:
    first = TreeNode(id="a", parent_id=None, role="user", depth=4, active=False, status="failed")
    last = TreeNode(id="b", parent_id="a", role="user", depth=3 + count, active=False, status="")
    return Segment(first=first, last=last, count=count, role_counts=Counter(user=count))


def test_a_cut_and_more_lines_count_and_escape_their_links() -> None:
    lines = [
        TreeLine(kind="cut", segment=_segment(1), count=1, url="/t/x/?leaf=a&b=<"),
        TreeLine(kind="cut", segment=_segment(1), count=7, url="/t/x/"),
        TreeLine(kind="more", count=1, compare_url="/t/x/fork/a/compare/"),
        TreeLine(kind="more", count=3, compare_url="/t/x/fork/b/compare/"),
    ]
    html = str(outline_html(lines))
    assert 'href="/t/x/?leaf=a&amp;b=&lt;">1 more line of this branch, not listed' in html
    assert ">7 more lines of this branch, not listed: open it in the conversation</a>" in html
    assert "1 more branch here, not listed" in html and "3 more branches here" in html


def test_a_row_shows_its_depth_span_role_bar_and_badges() -> None:
    line = TreeLine(kind="row", segment=_segment(3), url="/t/x/?leaf=a", label="User (3)")
    html = str(outline_html([line]))
    assert '<span class="seg-depth">#5\N{EN DASH}7</span>' in html
    assert '<span class="seg-count">3 msgs</span>' in html
    assert '<svg class="rolebar" viewBox="0 0 3 1"' in html
    assert '<rect class="role-user" x="0" width="3" height="1"/>' in html
    assert "(no text)" in html
    assert '<span class="tag tag-muted">alternative</span><span class="tag tag-failed">' in html
    assert 'class="tree-row is-alternative st-failed"' in html


def test_a_fork_inside_a_branch_is_a_group_one_level_down_owned_by_its_fork_point() -> None:
    seg = _segment(1)
    fork = TreeLine(kind="fork", count=2, open=False, compare_url="/c/")
    lines = [
        TreeLine(kind="row", segment=seg, url="/a", label="User"),
        fork,
        TreeLine(kind="branch"),
        TreeLine(kind="row", segment=seg, url="/b", label="User"),
        fork,
        TreeLine(kind="branch"),
        TreeLine(kind="row", segment=seg, url="/c", label="User"),
        TreeLine(kind="end-branch"),
        TreeLine(kind="more", count=4, compare_url="/m/"),
        TreeLine(kind="end-fork"),
        TreeLine(kind="end-branch"),
        TreeLine(kind="end-fork"),
        TreeLine(kind="cut", segment=seg, count=3, url="/d"),
    ]
    html = str(outline_html(lines))
    parser = _Nesting()
    parser.feed(html)
    assert parser.problems == [] and parser.open == []
    assert ARIA_PLACE.findall(html) == [
        ("1", "2", "1"),  # the first row, owning the outer fork
        ("2", "2", "1"), ("2", "2", "2"),  # its Compare link and its branch's row
        ("3", "3", "1"), ("3", "3", "2"), ("3", "3", "3"),  # Compare, the row, "4 more"
        ("1", "2", "2"),  # the cut line, back on the first level
    ]  # fmt: skip
    assert html.count('aria-expanded="false"') == 2
    assert 'aria-owns="tree-fork-1"' in html and 'id="tree-fork-1"' in html
    assert 'aria-owns="tree-fork-4"' in html and 'id="tree-fork-4"' in html

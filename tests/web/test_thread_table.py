"""The thread list as a trace table: status badges in words, counter columns, every sort with
its keyset pages, sortable headers with aria-sort, and the compact/detailed toggle."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.factories import make_run, make_thread
from transcripts import ledger, selectors
from transcripts.models import Thread
from transcripts.web.presenters.threads import badges_of

ROW_ID = re.compile(r'<tr class="thread-row" id="thread-([0-9A-Z]{26})">')


def _words(thread: Thread) -> list[str]:
    return [badge.word for badge in badges_of(thread)]


def test_each_row_says_its_state_in_words(viewer_client: Client) -> None:
    live = make_thread("Still streaming")
    make_run(live, ("text-delta", {"delta": "x"}), commit=False)
    failed = make_thread("Went wrong")
    run = make_run(failed, ("text-delta", {"delta": "x"}), commit=False)
    ledger.fail_run(run=run, error="boom")
    stopped = make_thread("Cancelled")
    ledger.cancel_run(run=make_run(stopped, commit=False))
    html = viewer_client.get("/").content.decode()
    for title, word in (
        ("Still streaming", "live"),
        ("Went wrong", "failed"),
        ("Cancelled", "stopped"),
    ):
        row = html.split(title)[1].split("</div>")[0]
        assert f">{word}</span>" in row, (title, row)


def test_flagged_hidden_archived_and_locked_are_badges_too() -> None:
    thread = Thread(title="t", flagged_count=2, hidden=True, locked=True)
    assert _words(thread) == ["flagged", "hidden", "locked"]
    thread.archived = True  # type: ignore[attr-defined]  # organise's field, when it lands
    assert _words(thread) == ["flagged", "hidden", "archived", "locked"]
    assert _words(Thread(open_run_count=1, last_run_status="failed")) == ["live"]
    assert _words(Thread(last_run_status="committed")) == []


def _seed(count: int) -> list[Thread]:
    """count threads with counters that often tie (so the id breaks the ties)."""
    threads = [make_thread(f"Row {n:02d}") for n in range(count)]
    for n, thread in enumerate(threads):
        Thread.objects.filter(pk=thread.pk).update(
            message_count=n % 4,
            branch_count=n % 3,
            total_tokens=(n * 37) % 11,
            cost_micros=(n * 53) % 7,
            last_run_duration_ms=(n * 13) % 5,
        )
    return threads


def _walk(client: Client, sort: str, htmx: dict[str, str]) -> list[str]:
    """Every thread id the list shows for sort, page after page."""
    html = client.get(f"/?sort={sort}").content.decode()
    seen = ROW_ID.findall(html)
    while "cursor=" in html:
        cursor = html.split("cursor=")[1].split('"')[0].replace("&amp;", "&")
        html = client.get(f"/?sort={sort}&cursor={cursor}", headers=htmx).content.decode()
        seen += ROW_ID.findall(html)
    return seen


@pytest.mark.parametrize("sort", sorted(selectors.THREAD_SORTS))
def test_every_sort_pages_through_every_thread_once_in_order(
    viewer_client: Client, htmx: dict[str, str], sort: str
) -> None:
    _seed(57)
    keyset = selectors.THREAD_SORTS[sort]
    expected = [
        str(pk) for pk in Thread.objects.order_by(*keyset.order).values_list("pk", flat=True)
    ]
    assert _walk(viewer_client, sort, htmx) == expected


def test_a_cursor_of_another_sort_is_a_400(viewer_client: Client) -> None:
    _seed(30)
    html = viewer_client.get("/?sort=recent").content.decode()
    cursor = html.split("cursor=")[1].split('"')[0].split("&")[0]
    assert viewer_client.get(f"/?sort=messages&cursor={cursor}").status_code == 400


def test_headers_sort_and_say_how(viewer_client: Client) -> None:
    _seed(30)  # more than a page: the headers' links start from the top, with no cursor
    html = viewer_client.get("/?sort=messages").content.decode()
    header = html.split('<th scope="col" class="col-num" aria-sort="descending">')[1].split(
        "</th>"
    )[0]
    assert "sort=messages_asc" in header and ">Messages<" in header and "cursor" not in header
    assert html.count("aria-sort=") == 1
    again = viewer_client.get("/?sort=messages_asc").content.decode()
    assert 'aria-sort="ascending"' in again
    assert "sort=messages&amp;" in again or 'sort=messages"' in again


def test_the_density_toggle_is_remembered(viewer_client: Client) -> None:
    make_thread("One")
    assert "density-detailed" in viewer_client.get("/").content.decode()
    chosen = viewer_client.get("/?density=compact")
    assert chosen.cookies["thread_density"].value == "compact"
    assert "density-compact" in chosen.content.decode()
    assert "density-compact" in viewer_client.get("/").content.decode()
    html = viewer_client.get("/?density=bogus").content.decode()
    assert "density-compact" in html  # an unknown choice changes nothing
    link = re.search(r'<a class="btn btn-quiet" href="([^"]+)">Detailed</a>', html)
    assert link is not None and "density=detailed" in link.group(1)


def test_the_list_counts_no_message_for_its_counters(viewer_client: Client) -> None:
    """The row's counters come from the thread row, not from counting messages."""
    make_run(make_thread("Small"), ("text-delta", {"delta": "x"}))
    with CaptureQueriesContext(connection) as queries:
        viewer_client.get("/?sort=tokens")
    sqls = [q["sql"].lower() for q in queries]
    assert not any("transcripts_message" in sql and "count(" in sql for sql in sqls)

"""Pages and API answers are byte-identical to their recorded snapshots (issue 23).

The demo threads (transcripts/demo.py), a report, a share link and filler threads enough for
a second page of the thread list are written through the ledger. The project's admin then
reads, with the real test client, the thread list (filters, search, sorts, second page), each
demo thread's conversation (and its htmx pagers, branch, tree map, shares panel, report form,
run trace and event log), compare, moderation, project, audit, datasets, import, new-thread and
shared pages, and the API's JSON reads and exports; a superuser reads the Django admin's lists.

Each answer is normalised by tests/web/golden.py (ids in order of first appearance, moments of
this run, relative times, durations, CSRF tokens and the share secret become placeholders;
nothing else) and compared with its file in tests/web/snapshots/: the status and content type,
the Location/Content-Disposition/HX-* headers, then the body (JSON one value a line, its key
order kept, after a line saying whether the raw bytes had json.dumps' default layout). A
difference fails, naming every changed page, with a unified diff of the first lines that
differ (at most 40 a page).

After a change that is meant to alter a page, record the snapshots again and review the diff:

    UPDATE_SNAPSHOTS=1 pytest tests/web/test_pages_unchanged.py
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.test import Client

from tests.base import make_user
from tests.factories import make_thread
from tests.web.golden import (
    Normaliser,
    Response,
    check_snapshot,
    difference,
    json_body,
    updating,
)
from transcripts.demo import load_demo
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.reports import report_message
from transcripts.ledger.shares import create_share
from transcripts.models import Message, Run, Thread

# Sequences restart for the test: the integer keys in the pages (reports, users, audit
# records) are the same whatever ran before.
SEQUENCED_DB = pytest.mark.django_db(transaction=True, reset_sequences=True)

SNAPSHOTS = Path(__file__).parent / "snapshots"
FILLERS = 23  # with the 3 demo threads, one more than a page of the thread list
HTMX = {"HTTP_HX_REQUEST": "true"}
DIFFS_SHOWN = 3  # pages whose diff the failure prints (every changed page is named)
KEPT_HEADERS = ("Location", "Content-Disposition", "HX-Redirect", "HX-Trigger")


@dataclass(frozen=True)
class Page:
    """One request: its snapshot name, URL and extra headers."""

    name: str
    url: str
    headers: dict[str, str]
    superuser: bool = False


@dataclass
class Site:
    """The seeded data, the clients of the project's admin and of a superuser (the Django
    admin), and the secret of the share link."""

    client: Client
    root: Client
    start: datetime
    secret: str
    threads: dict[str, Thread]


def _thread(fragment: str) -> Thread:
    return Thread.objects.get(title__icontains=fragment)


def _runs(thread: Thread) -> list[Run]:
    return list(Run.objects.filter(thread=thread).order_by("created_at"))


def _path(thread: Thread) -> list[Message]:
    return list(Message.objects.filter(thread=thread, active=True).order_by("depth"))


@pytest.fixture
def site(db: Any) -> Site:
    """Filler threads, then the demo threads (so they lead the list), a report and a share."""
    start = datetime.now(UTC) - timedelta(minutes=1)  # the demo backdates its events by seconds
    for number in range(FILLERS):
        make_thread(f"Filler thread {number:02d}")
    assert load_demo() is True
    admin = make_user("golden-admin")
    set_member(project=default_project(), user=admin, role="admin")
    threads = {
        "weather": _thread("Weather agent"),
        "haiku": _thread("Haiku"),
        "agents": _thread("agents"),
    }
    report_message(
        user=admin, message=_path(threads["agents"])[3], reason="harmful", note="a failing tool"
    )
    _, secret = create_share(thread=threads["weather"], user=admin)
    client = Client()
    client.force_login(admin)
    root = Client()
    root.force_login(make_user("golden-root", is_staff=True, is_superuser=True))
    return Site(client=client, root=root, start=start, secret=secret, threads=threads)


def _thread_pages(name: str, thread: Thread) -> list[Page]:
    """The conversation of a thread, its pagers, tree, shares panel, report form and last run."""
    path, last_run = _path(thread), _runs(thread)[-1]
    url = f"/t/{thread.id}/"
    return [
        Page(f"{name}-conversation", url, {}),
        Page(f"{name}-conversation-htmx", url, HTMX),
        Page(f"{name}-earlier", f"{url}?dir=before&from={path[-1].id}", HTMX),
        Page(f"{name}-later", f"{url}?dir=after&from={path[0].id}", HTMX),
        Page(f"{name}-tree", f"{url}tree/", {}),
        Page(f"{name}-tree-htmx", f"{url}tree/", HTMX),
        Page(f"{name}-shares-htmx", f"{url}shares/", HTMX),
        Page(f"{name}-report-htmx", f"{url}m/{path[-1].id}/report/", HTMX),
        Page(f"{name}-run", f"/runs/{last_run.id}/", {}),
        Page(
            f"{name}-run-trace-htmx",
            f"/runs/{last_run.id}/",
            {**HTMX, "HTTP_HX_TARGET": "run-trace"},
        ),
        Page(f"{name}-run-events-htmx", f"/runs/{last_run.id}/?after=5", HTMX),
    ]


def _branch_pages(haiku: Thread) -> list[Page]:
    """The haiku thread's branches: an inactive leaf, the fork point's compare, two runs."""
    prompt = Message.objects.get(thread=haiku, depth=0, active=False)
    answers = list(Run.objects.filter(thread=haiku, fork_from=prompt).order_by("created_at"))
    leaf = Message.objects.filter(run=answers[0]).get()
    compare = f"/t/{haiku.id}/fork/{prompt.id}/compare/"
    return [
        Page("haiku-leaf", f"/t/{haiku.id}/?leaf={leaf.id}", {}),
        Page("haiku-compare", compare, {}),
        Page("haiku-compare-rendered-htmx", f"{compare}?view=rendered", HTMX),
        Page("haiku-compare-runs", f"/compare/?a={answers[0].id}&b={answers[2].id}", {}),
    ]


def _api_calls(site: Site) -> list[Page]:
    """JSON reads of the API with the browser session."""
    calls = [
        Page("api-threads", "/api/v1/threads?limit=5", {}),
        Page("api-threads-search", "/api/v1/threads?q=haiku", {}),
        Page("api-runs", "/api/v1/runs", {}),
    ]
    for name, thread in site.threads.items():
        run = _runs(thread)[-1]
        base = f"/api/v1/threads/{thread.id}"
        calls += [
            Page(f"api-{name}-thread", base, {}),
            Page(f"api-{name}-messages", f"{base}/messages", {}),
            Page(f"api-{name}-messages-ai-sdk", f"{base}/messages?format=ai-sdk", {}),
            Page(f"api-{name}-shares", f"{base}/shares", {}),
            Page(f"api-{name}-run", f"/api/v1/runs/{run.id}", {}),
            Page(f"api-{name}-run-messages", f"/api/v1/runs/{run.id}/messages", {}),
            Page(f"api-{name}-run-events", f"/api/v1/runs/{run.id}/events?limit=20", {}),
            Page(f"api-{name}-export-openai", f"{base}/export?format=openai", {}),
        ]
    haiku = f"/api/v1/threads/{site.threads['haiku'].id}/export"
    return [
        *calls,
        Page("api-haiku-export-canonical", f"{haiku}?format=canonical", {}),
        Page("api-haiku-export-threadprotocol", f"{haiku}?format=threadprotocol&branches=all", {}),
    ]


def _admin_pages(site: Site) -> list[Page]:
    """The Django admin's lists of the ledger's models and a thread's change page."""
    lists = ("thread", "run", "message", "report", "sharelink", "auditrecord", "event")
    pages = [Page(f"admin-{model}s", f"/admin/transcripts/{model}/", {}, True) for model in lists]
    weather = site.threads["weather"].id
    return [
        Page("admin-index", "/admin/", {}, True),
        *pages,
        Page("admin-thread-change", f"/admin/transcripts/thread/{weather}/change/", {}, True),
    ]


def _pages(site: Site) -> list[Page]:
    """Every page and API call of the check, in a fixed order."""
    pages = [
        Page("threads", "/", {}),
        Page("threads-branches", "/?branches=on", {}),
        Page("threads-search", "/?q=haiku", {}),
        Page("threads-who", "/?who=demo-2", {}),
        Page("threads-sort-title", "/?sort=title", {}),
        Page("threads-sort-oldest-htmx", "/?sort=oldest", HTMX),
        Page("new-thread", "/new/", {}),
        Page("project", "/p/default/", {}),
        Page("project-audit", "/p/default/audit/", {}),
        Page("datasets", "/p/default/datasets/", {}),
        Page("import", "/import/", {}),
        Page("moderation", "/moderation/", {}),
        Page("moderation-resolved-htmx", "/moderation/?status=resolved", HTMX),
        Page("shared", f"/s/{site.secret}/", {}),
    ]
    for name, thread in site.threads.items():
        pages += _thread_pages(name, thread)
    return pages + _branch_pages(site.threads["haiku"]) + _api_calls(site) + _admin_pages(site)


def _next_page(site: Site) -> Page:
    """The thread list's second page, by the "load more" link of the first."""
    first = site.client.get("/", **HTMX).content.decode()
    query = re.search(r'hx-get="/\?(cursor=[^"]+)"', first)
    assert query is not None, "the thread list has no second page"
    return Page("threads-page-2-htmx", f"/?{query.group(1).replace('&amp;', '&')}", HTMX)


def _read(site: Site, page: Page) -> HttpResponseBase:
    client = site.root if page.superuser else site.client
    return client.get(page.url, **page.headers)  # type: ignore[arg-type, no-any-return]


def _body(answer: HttpResponseBase) -> str:
    if isinstance(answer, StreamingHttpResponse):
        return b"".join(answer.streaming_content).decode()  # type: ignore[arg-type]
    assert isinstance(answer, HttpResponse)
    return answer.content.decode()


def _snapshot(normaliser: Normaliser, answer: HttpResponseBase) -> Response:
    """The normalised record of an answer (a JSON body one value a line)."""
    content_type = answer.get("Content-Type", "")
    body = _body(answer)
    if content_type.startswith("application/json"):
        body = json_body(body)
    headers = tuple(
        (name, normaliser.normalise(answer[name]))
        for name in KEPT_HEADERS
        if answer.has_header(name)
    )
    return Response(answer.status_code, content_type, headers, normaliser.normalise(body))


def _render_all(site: Site) -> dict[str, Response]:
    pages = [*_pages(site), _next_page(site)]
    answers = {page.name: _read(site, page) for page in pages}
    normaliser = Normaliser(
        start=site.start, end=datetime.now(UTC), secrets={site.secret: "secret"}
    )
    return {name: _snapshot(normaliser, answer) for name, answer in answers.items()}


EXTENSIONS = {"application/json": "json", "application/x-ndjson": "jsonl", "text/html": "html"}


def _file(name: str, response: Response) -> Path:
    extension = EXTENSIONS.get(response.content_type.split(";")[0], "txt")
    return SNAPSHOTS / f"{name}.{extension}"


def _stale(recorded: set[str]) -> list[str]:
    """Snapshot files no page renders any more (deleted when updating)."""
    stale = sorted(p for p in SNAPSHOTS.iterdir() if p.name not in recorded)
    if updating():
        for path in stale:
            path.unlink()
        return []
    return [path.name for path in stale]


@SEQUENCED_DB
def test_pages_match_their_snapshots(site: Site) -> None:
    responses = _render_all(site)
    problems = {
        name: problem
        for name, response in responses.items()
        if (problem := check_snapshot(_file(name, response), response.text())) is not None
    }
    stale = _stale({_file(name, response).name for name, response in responses.items()})
    assert not stale, f"snapshots no page renders any more: {stale}"
    shown = list(problems.values())[:DIFFS_SHOWN]
    assert not problems, (
        f"{len(problems)} page(s) changed: {', '.join(problems)}\n\n" + "\n\n".join(shown)
    )


@SEQUENCED_DB
def test_a_small_change_of_a_page_is_detected(site: Site) -> None:
    """The normaliser is not so greedy that it hides a real change: one thread renamed, its
    conversation and the thread list no longer match their snapshots, on the title's lines
    only."""
    weather = site.threads["weather"]
    Thread.objects.filter(pk=weather.pk).update(title="Weather agent: should I walk to work?")
    normaliser = Normaliser(start=site.start, end=datetime.now(UTC))
    for page in (Page("threads", "/", {}), Page("weather-conversation", f"/t/{weather.id}/", {})):
        response = _snapshot(normaliser, _read(site, page))
        path = _file(page.name, response)
        problem = difference(path.name, path.read_text(encoding="utf-8"), response.text())
        assert problem is not None, f"{page.name}: a renamed thread went unnoticed"
        changed = [
            line
            for line in problem.splitlines()[2:]
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
        ]
        assert any("should I walk to work?" in line for line in changed if line[0] == "+")
        # Nothing but the title differs: each removed line, renamed, is the added line (lines
        # between two nearby titles may be listed as changed, but come back unchanged).
        removed = [line[1:].replace("should I bike", "should I walk") for line in changed
                   if line[0] == "-"]  # fmt: skip
        assert removed == [line[1:] for line in changed if line[0] == "+"]


NOW = datetime(2026, 11, 27, 7, 30, 12, tzinfo=UTC)


def test_the_normaliser_replaces_only_what_the_clock_and_randomness_decide() -> None:
    normaliser = Normaliser(start=NOW, end=NOW + timedelta(seconds=5), secrets={"s3cr3t": "secret"})
    page = (
        '<a href="/t/01M8DYKMVPZWDJ0DTG4FG0FRF2/">x</a> <a href="/s/s3cr3t/">'
        '<time datetime="2026-11-27T07:30:14.123456+00:00" title="2026-11-27 07:30 UTC">just now'
        "</time> <span>3 minutes ago</span> <dd>11 ms</dd> <span>+0.002s</span> "
        '"created_at": "2026-11-01T09:00:00Z" hx-trigger="input changed delay:350ms" '
        "<dd>942</dd> 01m8dykmvpzwdj0dtg4fg0frf2 01M8DYKMWERP4V06CJYP6WCMK6 "
        "Nov 27, 07:30 Nov 27, 2026 07:30 Nov 1, 2026 09:00 2026-11-27"
    )
    assert normaliser.normalise(page) == (
        '<a href="/t/<id1>/">x</a> <a href="/s/<secret>/">'
        '<time datetime="<time>" title="<time>"><ago>'
        "</time> <span><ago></span> <dd><duration></dd> <span>+<duration></span> "
        '"created_at": "2026-11-01T09:00:00Z" hx-trigger="input changed delay:350ms" '
        "<dd>942</dd> 01m8dykmvpzwdj0dtg4fg0frf2 <id2> "
        "<time> <time> Nov 1, 2026 09:00 <date>"
    )


def test_ids_keep_their_identity_so_a_swapped_reference_is_seen() -> None:
    normaliser = Normaliser(start=NOW, end=NOW)
    first, second = "01M8DYKMVPZWDJ0DTG4FG0FRF2", "01M8DYKMWERP4V06CJYP6WCMK6"
    same = normaliser.normalise(f"{first} {second} {first}")
    swapped = normaliser.normalise(f"{first} {second} {second}")
    assert same == "<id1> <id2> <id1>"
    assert normaliser.normalise(f"{second} {first[:10]}… {second[:10]}…") == "<id1> <id2>… <id1>…"
    assert swapped != same

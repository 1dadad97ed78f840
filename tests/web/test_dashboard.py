"""The project dashboard: its numbers on a known data set, the window's bounds, who may see it,
an empty project, and the stats API giving the page's numbers as JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.api.conftest import ApiClient
from tests.base import Team
from tests.factories import make_run, make_thread
from transcripts.ledger import fail_run
from transcripts.ledger.projects import choose_project, set_member
from transcripts.models import Profile, Project, Run, Thread
from transcripts.selectors.stats import Window, make_window, project_stats

pytestmark = pytest.mark.django_db

DAY1 = datetime(2026, 3, 2, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)
BOUND = 2 ** (1 / 16) - 1  # the histograms' relative error
WEEK = Window(DAY1 - timedelta(days=3), DAY1 + timedelta(days=4))


def agent_answer(agent: str) -> list[tuple[str, dict[str, Any]]]:
    """The events of one answer written by agent."""
    return [
        ("message-start", {"role": "assistant", "agentId": agent}),
        ("text-delta", {"delta": "ok"}),
    ]


def timed_run(
    thread: Thread,
    at: datetime,
    *,
    model: str,
    usage: dict[str, int],
    seconds: float,
    first: float,
    agent: str = "",
    failed: bool = False,
) -> Run:
    """A run begun at `at`, its first event after `first` s, finished after `seconds` s."""
    items = agent_answer(agent) if agent else [("text-delta", {"delta": "ok"})]
    run = make_run(thread, *items, commit=not failed, model=model)
    if failed:
        run = fail_run(run=run, error={"message": "boom"})
    Run.objects.filter(pk=run.pk).update(
        created_at=at,
        started_at=at,
        first_event_at=at + timedelta(seconds=first),
        finished_at=at + timedelta(seconds=seconds),
        usage=usage,
    )
    return run


@pytest.fixture
def known(team: Team) -> Project:
    """Project alpha: five runs over two days in two threads (one hidden), two models (one
    priced), two agents, one failure; and one run outside the window."""
    busy = make_thread("Busy", project=team.alpha)
    quiet = make_thread("Quiet", project=team.alpha)
    hidden = make_thread("Secret", project=team.alpha)
    Thread.objects.filter(pk=hidden.pk).update(hidden=True)
    noon = DAY1 + timedelta(hours=12)
    timed_run(
        busy,
        noon,
        model="gpt-4o",
        usage={"inputTokens": 1000, "outputTokens": 100},
        seconds=2,
        first=0.5,
        agent="planner",
    )
    timed_run(
        busy,
        noon + timedelta(hours=1),
        model="gpt-4o",
        usage={"input_tokens": 3000, "output_tokens": 300},
        seconds=4,
        first=1,
        agent="coder",
    )
    timed_run(
        busy,
        noon + timedelta(hours=2),
        model="local",
        usage={"inputTokens": 50},
        seconds=10,
        first=3,
        agent="coder",
        failed=True,
    )
    timed_run(
        quiet,
        DAY2 + timedelta(hours=3),
        model="local",
        usage={"outputTokens": 7},
        seconds=6,
        first=2,
    )
    timed_run(
        hidden,
        DAY2 + timedelta(hours=4),
        model="gpt-4o",
        usage={"inputTokens": 1_000_000},
        seconds=1,
        first=1,
    )
    timed_run(
        quiet,
        DAY1 - timedelta(days=10),
        model="gpt-4o",
        usage={"inputTokens": 9},
        seconds=1,
        first=1,
    )
    return team.alpha


def test_the_numbers_of_a_known_data_set(known: Project) -> None:
    stats = project_stats(known.pk, WEEK, include_hidden=False)

    assert stats.statuses == {"completed": 3, "failed": 1, "stopped": 0, "open": 0}
    assert stats.failure_rate == pytest.approx(0.25)
    assert (stats.total.input_tokens, stats.total.output_tokens) == (4050, 407)
    # gpt-4o: 4000 in at $2.50/M and 400 out at $10/M; "local" has no price.
    assert stats.total.cost == pytest.approx(0.014)
    days = {b.start: b for b in stats.buckets}
    assert len(stats.buckets) == 7 and stats.buckets[0].start == WEEK.start
    assert days[DAY1].statuses["completed"] == 2 and days[DAY1].statuses["failed"] == 1
    assert days[DAY1].failure_rate == pytest.approx(1 / 3)
    assert days[DAY1].models["gpt-4o"].input_tokens == 4000
    assert days[DAY1].models["local"].cost is None
    assert days[DAY2].runs == 1 and days[DAY2].failure_rate == 0
    assert days[DAY1 - timedelta(days=1)].runs == 0
    # Percentiles come from log-scale histograms: within 4.4% of the exact value.
    assert days[DAY1].timing.latency_p50 == pytest.approx(4, rel=BOUND)
    assert stats.timing.latency_p50 == pytest.approx(5, rel=BOUND)  # of 2, 4, 6, 10 s
    assert stats.timing.latency_p95 == pytest.approx(9.4, rel=BOUND)
    assert stats.timing.ttft_p50 == pytest.approx(1.5, rel=BOUND)
    assert [(m.name, m.usage.runs, m.usage.failed) for m in stats.models] == [
        ("gpt-4o", 2, 0),
        ("local", 2, 1),
    ]
    assert [(a.name, a.usage.runs, a.usage.failed) for a in stats.agents] == [
        ("coder", 1, 0),  # a failed run keeps no message: its agent is not known
        ("planner", 1, 0),
    ]
    assert [(t.title, t.runs, t.failed) for t in stats.threads] == [("Busy", 3, 1), ("Quiet", 1, 0)]


def test_hidden_threads_count_for_who_may_see_them(known: Project) -> None:
    stats = project_stats(known.pk, WEEK, include_hidden=True)

    assert stats.statuses["completed"] == 4
    assert "Secret" in [t.title for t in stats.threads]


def test_the_window_is_half_open_and_hourly_when_short(known: Project) -> None:
    noon = DAY1 + timedelta(hours=12)
    stats = project_stats(known.pk, Window(noon, noon + timedelta(hours=2)), include_hidden=False)

    assert stats.window.unit == "hour"
    assert [b.runs for b in stats.buckets] == [1, 1]  # the run at 14:00 is the next window's


def test_an_empty_project_has_zeros_and_no_rates(team: Team) -> None:
    stats = project_stats(team.beta.pk, WEEK, include_hidden=True)

    assert stats.total.runs == 0 and stats.total.cost is None
    assert stats.failure_rate is None and stats.timing.latency_p50 is None
    assert stats.models == stats.agents == [] and stats.threads == []
    assert all(b.runs == 0 for b in stats.buckets)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (DAY2, DAY1),
        (DAY1, DAY1),
        (DAY1, DAY1 + timedelta(days=400)),
        (DAY1.replace(tzinfo=None), DAY2),
    ],
)
def test_a_bad_window_is_refused(start: datetime, end: datetime) -> None:
    from transcripts.errors import InvalidInput

    with pytest.raises(InvalidInput):
        make_window(start, end)


# --- the stats API -------------------------------------------------------------------------

WEEK_QUERY = {"from": "2026-02-27", "to": "2026-03-05"}


def test_the_api_gives_the_selectors_numbers(team: Team, known: Project) -> None:
    reader = ApiClient(team.token(team.alpha, "read"))

    body = reader.get("/projects/alpha/stats", **WEEK_QUERY).json()

    stats = project_stats(known.pk, WEEK, include_hidden=False)
    assert body["from"] == "2026-02-27T00:00:00Z" and body["to"] == "2026-03-06T00:00:00Z"
    assert body["runs"] == {"total": 4, "completed": 3, "failed": 1, "stopped": 0, "open": 0}
    assert body["failureRate"] == stats.failure_rate
    assert (body["inputTokens"], body["outputTokens"]) == (4050, 407)
    assert body["cost"] == pytest.approx(stats.total.cost)
    assert body["latency"] == {
        "p50": pytest.approx(5.0, rel=BOUND),
        "p95": pytest.approx(9.4, rel=BOUND),
    }
    assert [m["name"] for m in body["models"]] == ["gpt-4o", "local"]
    assert [t["title"] for t in body["threads"]] == ["Busy", "Quiet"]
    day1 = next(b for b in body["buckets"] if b["start"] == "2026-03-02T00:00:00Z")
    assert day1["runs"]["failed"] == 1 and day1["models"][0]["inputTokens"] == 4000


def test_an_admin_token_counts_hidden_threads(team: Team, known: Project) -> None:
    admin = ApiClient(team.token(team.alpha, "admin"))

    assert admin.get("/projects/alpha/stats", **WEEK_QUERY).json()["runs"]["completed"] == 4


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-13-01"}, "to"),
        ({"from": "2026-03-05", "to": "2026-03-01"}, "to"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "from"),
        ({"to": "0001-01-02"}, "from"),
        ({"to": "9999-12-31"}, "to"),
    ],
)
def test_bad_dates_are_422(team: Team, query: dict[str, str], field: str) -> None:
    reader = ApiClient(team.token(team.alpha, "read"))

    response = reader.get("/projects/alpha/stats", **query)

    assert response.status_code == 422, response.content
    assert field in response.content.decode()


def test_who_may_read_the_stats(team: Team) -> None:
    assert ApiClient(team.token(team.beta, "read")).get("/projects/alpha/stats").status_code == 404
    ingest = ApiClient(team.token(team.alpha, "ingest"))
    assert ingest.get("/projects/alpha/stats").status_code == 403
    assert ApiClient(None).get("/projects/alpha/stats").status_code == 401
    assert ApiClient(team.token(team.alpha, "read")).get("/projects/nope/stats").status_code == 404
    stranger = ApiClient(client=team.client(team.stranger))
    assert stranger.get("/projects/alpha/stats").status_code == 404
    viewer = ApiClient(client=team.client(team.viewer))
    assert viewer.get("/projects/alpha/stats").status_code == 200


def test_an_empty_project_over_the_api(team: Team) -> None:
    body = ApiClient(team.token(team.beta, "read")).get("/projects/beta/stats").json()

    assert body["runs"]["total"] == 0 and body["failureRate"] is None and body["cost"] is None
    assert len(body["buckets"]) == 8 and body["unit"] == "day"


# --- the page ------------------------------------------------------------------------------

CUSTOM = {"window": "custom", "from": "2026-02-27", "to": "2026-03-05"}


def test_the_page_shows_the_apis_numbers(team: Team, known: Project) -> None:
    body = ApiClient(team.token(team.alpha, "read")).get("/projects/alpha/stats", **WEEK_QUERY)

    page = team.client(team.viewer).get("/p/alpha/dashboard/", CUSTOM)

    assert page.status_code == 200
    html = page.content.decode()
    figures = body.json()
    assert f'<dd class="dash-value">{figures["runs"]["total"]}</dd>' in html
    assert "25.0%" in html  # the failure rate
    assert "4,050 / 407" in html and "$0.01<" in html
    latency = figures["latency"]
    assert f"{latency['p50']:.1f} s / {latency['p95']:.1f} s" in html  # latency p50 / p95
    assert ">Busy</a>" in html and "Secret" not in html
    assert "?project=alpha&amp;since=2026-03-02&amp;until=2026-03-02&amp;failed=on" in html
    assert "who=gpt-4o" in html
    project_page = team.client(team.viewer).get("/p/alpha/").content.decode()
    assert 'href="/p/alpha/dashboard/"' in project_page


def test_a_moderator_sees_hidden_threads_counted(team: Team, known: Project) -> None:
    html = team.client(team.moderator).get("/p/alpha/dashboard/", CUSTOM).content.decode()

    assert ">Secret</a>" in html


@pytest.mark.parametrize(
    "query",
    [
        {"window": "24h"},
        {"window": "7d"},
        {"window": "30d"},
        {},
        {"window": "custom", "from": "9999-10-01", "to": "9999-12-30"},
        {"window": "custom", "from": "0001-01-01", "to": "0001-06-01"},
    ],
)
def test_every_window_renders_for_an_empty_project(team: Team, query: dict[str, str]) -> None:
    page = team.client(team.outsider).get("/p/beta/dashboard/", query)

    assert page.status_code == 200
    assert "No run in this window." in page.content.decode()


@pytest.mark.parametrize(
    "query",
    [
        {"window": "1y"},
        {"window": "custom", "from": "soon"},
        {"window": "custom", "from": "2026-03-05", "to": "2026-03-01"},
        {"window": "custom", "from": "2000-01-01", "to": "2026-01-01"},
    ],
)
def test_a_bad_window_is_a_422_that_says_why(team: Team, query: dict[str, str]) -> None:
    page = team.client(team.viewer).get("/p/alpha/dashboard/", query)

    assert page.status_code == 422
    assert 'role="alert"' in page.content.decode()


def test_outsiders_get_404(team: Team) -> None:
    assert team.client(team.outsider).get("/p/alpha/dashboard/").status_code == 404
    assert team.client(team.stranger).get("/p/alpha/dashboard/").status_code == 404
    assert team.client(team.viewer).get("/p/nope/dashboard/").status_code == 404
    assert team.client(team.viewer).post("/p/alpha/dashboard/").status_code == 405


def test_a_long_window_is_drawn_by_the_week(known: Project) -> None:
    window = Window(DAY1 - timedelta(days=50, hours=5), DAY1 + timedelta(days=50))
    stats = project_stats(known.pk, window, include_hidden=False)

    assert window.unit == "week"
    assert all(b.start.weekday() == 0 and b.start.hour == 0 for b in stats.buckets)
    assert stats.buckets[0].start <= window.start < stats.buckets[1].start
    weeks = {b.start: b.runs for b in stats.buckets}
    assert weeks[DAY1] == 4 and weeks[DAY1 - timedelta(days=14)] == 1


# --- links name their project --------------------------------------------------------------


def current_slug(user: Any) -> str | None:
    """The slug of the project the user's thread list shows (None: none remembered)."""
    profile = Profile.objects.filter(user=user).select_related("current_project").first()
    return profile.current_project.slug if profile and profile.current_project else None


def test_a_dashboard_link_opens_the_dashboards_project(team: Team, known: Project) -> None:
    set_member(project=team.beta, user=team.viewer, role="viewer")
    choose_project(user=team.viewer, project=team.beta)
    client = team.client(team.viewer)
    assert "Busy" not in client.get("/").content.decode()  # the list shows beta
    html = client.get("/p/alpha/dashboard/", CUSTOM).content.decode()
    link = "/?project=alpha&since=2026-03-02&until=2026-03-02&failed=on"
    assert link.replace("&", "&amp;") in html

    answer = client.get(link)

    assert answer.status_code == 303
    assert answer["Location"] == "/?since=2026-03-02&until=2026-03-02&failed=on"
    assert current_slug(team.viewer) == "alpha"
    assert client.get(answer["Location"]).status_code == 200
    assert "Busy" in client.get("/").content.decode()  # the list shows alpha now


@pytest.mark.parametrize("slug", ["alpha", "nope", "", "al\x00pha", "x" * 300])
def test_a_list_of_a_project_the_user_cannot_read_is_404(team: Team, slug: str) -> None:
    choose_project(user=team.outsider, project=team.beta)

    answer = team.client(team.outsider).get("/", {"project": slug, "who": "x"})

    assert answer.status_code == 404
    assert current_slug(team.outsider) == "beta"

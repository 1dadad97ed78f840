"""The thread list's agent/model filter and title search, and the trigram indexes they use."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext

from tests.base import Team
from tests.factories import make_run, make_thread, say
from transcripts import selectors
from transcripts.models import Message, Run, Thread
from transcripts.selectors import threads as thread_selectors
from transcripts.selectors.threads import title_contains, with_titles


def listed(team: Team, query: str) -> str:
    """The thread list of alpha as its viewer sees it, filtered by query."""
    response = team.client(team.viewer).get("/?" + query)
    assert response.status_code == 200
    return response.content.decode()


def test_a_rare_word_only_in_a_title_finds_its_thread(team: Team) -> None:
    found = make_thread("Trip to Quokkaville notes", project=team.alpha)
    say(found, "nothing about islands here")
    other = make_thread("Groceries", project=team.alpha)
    say(other, "apples and pears")
    make_thread("Quokkaville in beta", project=team.beta)

    page = listed(team, "q=QUOKKAVILLE")

    assert "Trip to Quokkaville notes" in page
    assert "Groceries" not in page
    assert "Quokkaville in beta" not in page


def test_who_finds_threads_by_run_model_and_by_agent_in_any_case(team: Team) -> None:
    by_model = make_thread("Model thread", project=team.alpha)
    say(by_model, "hello", model="Claude-Opus-X")
    by_message_agent = make_thread("Agent message thread", project=team.alpha)
    make_run(
        by_message_agent,
        ("message-start", {"role": "assistant", "agentId": "Planner-Bot"}),
        ("text-delta", {"delta": "plan"}),
        ("message-end", {}),
    )
    make_thread("Agents thread", project=team.alpha, agents={"reviewer-bot": {"name": "R"}})
    say(make_thread("Nobody", project=team.alpha), "plain", model="gpt-4o")
    say(make_thread("Beta claude", project=team.beta), "hello", model="claude-opus-x")

    claude = listed(team, "who=claude-OPUS")
    planner = listed(team, "who=planner-bot")
    reviewer = listed(team, "who=REVIEWER")

    assert "Model thread" in claude and "Nobody" not in claude and "Beta claude" not in claude
    assert "Agent message thread" in planner and "Model thread" not in planner
    assert "Agents thread" in reviewer and "Model thread" not in reviewer


def threads_of_a_model(team: Team, model: str, count: int) -> tuple[set[Thread], QuerySet[Thread]]:
    """count threads of alpha answered by model (returned), one of alpha by another model and
    one of beta by model; and alpha's threads, as its list reads them."""
    wanted = {make_thread(f"{model} {n}", project=team.alpha) for n in range(count)}
    for thread in wanted:
        say(thread, "hi", model=model)
    say(make_thread("Other model", project=team.alpha), "hi", model="gpt-4o")
    say(make_thread(f"Beta {model}", project=team.beta), "hi", model=model)
    return wanted, Thread.objects.filter(project=team.alpha)


def test_who_finds_the_same_threads_by_index_and_by_walking_the_list(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted, visible = threads_of_a_model(team, "demo-model", 3)

    indexed = set(selectors.filter_threads(visible, agent_or_model="DEMO"))
    # As if the matches were many: the list is walked with a check per thread.
    monkeypatch.setattr(thread_selectors, "FEW_MATCHES", -1)
    walked = set(selectors.filter_threads(visible, agent_or_model="DEMO"))

    assert walked == indexed == wanted


def test_search_finds_the_same_threads_by_index_and_by_walking_the_list(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = team.alpha
    in_message = make_thread("Plain title", project=alpha)
    say(in_message, "a wombatry of words")
    in_title = make_thread("All about wombatry", project=alpha)
    say(in_title, "nothing here")
    say(make_thread("Unrelated", project=alpha), "nothing either")
    say(make_thread("Beta wombatry", project=team.beta), "wombatry")
    visible = Thread.objects.filter(project=alpha)

    indexed = set(selectors.search_threads(visible, "wombatry"))
    monkeypatch.setattr(thread_selectors, "FEW_MATCHES", -1)
    walked = set(selectors.search_threads(visible, "wombatry"))

    assert walked == indexed == {in_message, in_title}


@pytest.mark.parametrize(
    ("queryset", "index"),
    [
        (lambda: Run.objects.filter(model__icontains="claude"), "run_model_trgm_idx"),
        (
            lambda: with_titles(Thread.objects.all()).filter(title_contains("quokka")),
            "thread_title_folded_trgm_idx",
        ),
        (lambda: Thread.objects.filter(agents__icontains="planner"), "thread_agents_trgm_idx"),
        (
            lambda: Message.objects.filter(metadata__agentId__icontains="planner"),
            "message_agent_model_trgm_idx",
        ),
        (
            lambda: Message.objects.filter(metadata__model__icontains="claude"),
            "message_agent_model_trgm_idx",
        ),
    ],
)
def test_the_filters_patterns_can_use_a_trigram_index(
    team: Team, queryset: object, index: str
) -> None:
    with connection.cursor() as cursor:
        # A tiny table is cheaper to scan: forbid that to see whether the index matches.
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = queryset().explain()  # type: ignore[operator]
    assert index in plan


def test_matches_among_newest_counts_only_the_newest_rows_up_to_a_bound(team: Team) -> None:
    thread = make_thread("Runs", project=team.alpha)
    for n in range(8):
        say(thread, "hi", model="claude-x" if n % 2 else "gpt-4o")
    say(thread, "hi", model="odd%_model")
    newest = sorted(Run.objects.values_list("id", "model"), reverse=True)
    claude = Run.objects.filter(model__icontains="CLAUDE")

    for window in (1, 3, 5, 9, 20):
        expected = sum("claude" in model for _, model in newest[:window])
        assert thread_selectors.matches_among_newest(claude, window, 100) == expected
    assert thread_selectors.matches_among_newest(claude, 20, 2) == 2
    # The pattern's % and _ are letters, as the filter reads them.
    literal = Run.objects.filter(model__icontains="%_")
    assert thread_selectors.matches_among_newest(literal, 20, 100) == 1
    assert (
        thread_selectors.matches_among_newest(Run.objects.filter(model__icontains="d%m"), 20, 9)
        == 0
    )


def test_who_walks_the_list_without_the_indexes_when_the_newest_runs_match_often(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model most new runs use is common: the trigram index, whose bitmap holds every match
    (the whole table for such a model), is not asked, whatever the planner's statistics say."""
    wanted, visible = threads_of_a_model(team, "claude-x", 4)
    monkeypatch.setattr(thread_selectors, "FEW_MATCHES", 3)

    def listed() -> tuple[set[Thread], list[str]]:
        with CaptureQueriesContext(connection) as captured:
            found = set(selectors.filter_threads(visible, agent_or_model="Claude"))
        return found, [query["sql"] for query in captured.captured_queries]

    common, common_sql = listed()
    # Among the 2 newest runs at most 2 match: few enough to ask the indexes.
    monkeypatch.setattr(thread_selectors, "NEWEST_RUNS", 2)
    few, few_sql = listed()

    assert common == few == wanted
    assert not any("UNION ALL" in sql for sql in common_sql)
    assert any("UNION ALL" in sql for sql in few_sql)

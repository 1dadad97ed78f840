"""What each dataset holds: exact rows, the chosen answer, tool calls, redaction, hidden threads
and the filters."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.base import Team
from tests.datasets.conftest import Regenerated, answer, regenerated_thread
from tests.factories import ask, last_message, make_run, make_thread
from transcripts import datasets
from transcripts.errors import InvalidInput
from transcripts.ledger import moderation
from transcripts.ledger.ratings import rate_run
from transcripts.models import Project, Thread

pytestmark = pytest.mark.django_db

SYSTEM = {"role": "system", "content": "Be brief."}
QUESTION = {"role": "user", "content": "What is two plus two?"}


def export(project: Project, kind: str, **values: str) -> list[dict[str, Any]]:
    """The dataset's rows, read back from its JSON Lines."""
    query = datasets.parse_query(kind, values)
    return [json.loads(line) for line in datasets.jsonl_lines(project, query)]


def said(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def test_it_pairs_the_rated_answer_with_each_other_answer(
    team: Team, regenerated: Regenerated
) -> None:
    rows = export(team.alpha, "preferences", format="trl")
    r = regenerated
    prompt_runs = [r.system.run_id, r.prompt.run_id]
    assert rows == [
        {
            "prompt": [SYSTEM, QUESTION],
            "chosen": [said("Four.")],
            "rejected": [said(rejected)],
            "metadata": {
                "project": "alpha",
                "threadId": r.thread.id,
                "forkMessageId": r.prompt.id,
                "chosenRunId": r.second.id,
                "rejectedRunId": rejected_run.id,
                "chosenBy": "rating",
                "runIds": [*prompt_runs, r.second.id, rejected_run.id],
            },
        }
        for rejected, rejected_run in (("It is four.", r.first), ("2 + 2 = 4", r.third))
    ]


def test_without_a_rating_the_kept_answer_is_chosen(team: Team) -> None:
    thread = make_thread("Unrated", project=team.alpha)
    prompt = last_message(ask(thread, "Name a colour"))
    answer(thread, "Red")
    kept = answer(thread, "Blue", fork_from=prompt.id)
    rows = export(team.alpha, "preferences")
    assert [(row["chosen"], row["rejected"]) for row in rows] == [([said("Blue")], [said("Red")])]
    assert rows[0]["metadata"]["chosenBy"] == "kept"
    assert rows[0]["metadata"]["chosenRunId"] == kept.id


def test_openai_preference_rows_hold_only_the_documented_keys(
    team: Team, regenerated: Regenerated
) -> None:
    rows = export(team.alpha, "preferences", format="openai")
    assert rows == [
        {
            "input": {"messages": [SYSTEM, QUESTION]},
            "preferred_output": [said("Four.")],
            "non_preferred_output": [said(rejected)],
        }
        for rejected in ("It is four.", "2 + 2 = 4")
    ]
    plain = export(team.alpha, "sft", format="hf", metadata="false")
    assert plain and all("metadata" not in row for row in plain)
    traced = export(team.alpha, "preferences", format="openai", metadata="true")
    assert [row["metadata"]["rejectedRunId"] for row in traced] == [
        regenerated.first.id,
        regenerated.third.id,
    ]


def test_sft_follows_the_active_path_or_every_branch(team: Team, regenerated: Regenerated) -> None:
    follow_up = {"role": "user", "content": "And three plus three?"}
    active = [SYSTEM, QUESTION, said("2 + 2 = 4"), follow_up, said("Six.")]
    assert export(team.alpha, "sft") == [{"messages": active}]
    rows = export(team.alpha, "sft", format="hf", branches="all")
    assert [row["messages"] for row in rows] == [
        [SYSTEM, QUESTION, said("It is four.")],
        [SYSTEM, QUESTION, said("Four.")],
        active,
    ]
    assert [row["metadata"]["branch"] for row in rows] == ["other", "other", "active"]
    assert rows[2]["metadata"]["leafMessageId"] == last_message(regenerated.final).id


def tool_thread(team: Team) -> Thread:
    """A question answered once through a weather tool and once directly (kept)."""
    thread = make_thread("Weather", project=team.alpha)
    prompt = last_message(ask(thread, "Weather in Paris?"))
    make_run(
        thread,
        ("tool-call", {"toolCallId": "call_1", "toolName": "weather", "input": {"city": "Paris"}}),
        ("tool-result", {"toolCallId": "call_1", "toolName": "weather", "output": {"c": 21}}),
        ("text-delta", {"delta": "It is 21 °C."}),
    )
    answer(thread, "Sunny, I think.", fork_from=prompt.id)
    return thread


def test_tool_calls_take_each_formats_shape(team: Team) -> None:
    tool_thread(team)
    openai_rows = export(team.alpha, "sft", branches="all")
    assert openai_rows[0]["messages"][1:] == [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"c":21}'},
        said("It is 21 °C."),
    ]
    hf_rows = export(team.alpha, "sft", format="hf", branches="all")
    assert hf_rows[0]["messages"][1:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"c":21}', "name": "weather", "tool_call_id": "call_1"},
        said("It is 21 °C."),
    ]


def test_an_answer_of_several_messages_has_no_openai_preference_row(team: Team) -> None:
    tool_thread(team)
    trl = export(team.alpha, "preferences")
    assert [len(row["rejected"]) for row in trl] == [3]
    assert export(team.alpha, "preferences", format="openai") == []
    query = datasets.parse_query("preferences", {"format": "openai"})
    summary = datasets.summarize(team.alpha, query)
    assert summary.skipped == {"the answer spans several messages": 1}


def test_a_redacted_answer_leaves_its_row_out(team: Team, regenerated: Regenerated) -> None:
    moderation.redact_message(
        user=team.owner, message=last_message(regenerated.first), reason="leaked"
    )
    rows = export(team.alpha, "preferences")
    assert [row["rejected"] for row in rows] == [[said("2 + 2 = 4")]]
    dumped = json.dumps(export(team.alpha, "sft", branches="all"))
    assert "It is four." not in dumped and "redacted" not in dumped
    query = datasets.parse_query("sft", {"branches": "all"})
    assert datasets.summarize(team.alpha, query).skipped == {"redacted": 1}


def test_a_redacted_prompt_leaves_the_whole_fork_point_out(
    team: Team, regenerated: Regenerated
) -> None:
    moderation.redact_message(user=team.owner, message=regenerated.prompt, reason="leaked")
    assert export(team.alpha, "preferences") == []
    assert export(team.alpha, "sft", branches="all") == []


def test_hidden_threads_never_enter_a_dataset(team: Team, regenerated: Regenerated) -> None:
    moderation.hide_thread(user=team.moderator, thread=regenerated.thread, reason="spam")
    assert export(team.alpha, "preferences") == []
    assert export(team.alpha, "sft", branches="all") == []


def test_other_projects_threads_stay_out(team: Team, regenerated: Regenerated) -> None:
    assert export(team.beta, "preferences") == []
    assert export(team.beta, "sft") == []


def test_filters_narrow_the_threads(team: Team, regenerated: Regenerated) -> None:
    other = make_thread("Colours", project=team.alpha)
    prompt = last_message(ask(other, "Name a colour"))
    answer(other, "Red", model="model-z")
    answer(other, "Blue", fork_from=prompt.id, model="model-z")

    def threads(**values: str) -> set[str]:
        return {row["metadata"]["threadId"] for row in export(team.alpha, "preferences", **values)}

    both = {regenerated.thread.id, other.id}
    assert threads() == both
    assert threads(model="MODEL-Z") == {other.id}
    assert threads(model="model-b") == {regenerated.thread.id}
    assert threads(rated="true") == {regenerated.thread.id}
    assert threads(q="colour") == {other.id}
    assert threads(agent="nobody") == set()
    today = timezone.localdate()
    assert threads(since=str(today), until=str(today)) == both
    tomorrow = str(today + timedelta(days=1))
    assert threads(since=tomorrow) == set()
    assert threads(since=tomorrow, dated="created") == set()
    assert threads(until=str(today - timedelta(days=1)), dated="created") == set()


def test_rated_only_keeps_sft_paths_through_a_preferred_run(
    team: Team, regenerated: Regenerated
) -> None:
    rows = export(team.alpha, "sft", format="hf", branches="all", rated="true")
    assert [row["messages"][-1] for row in rows] == [said("Four.")]
    rate_run(user=team.editor, run=regenerated.final, preferred=True)
    assert len(export(team.alpha, "sft", rated="true")) == 1


def test_agents_are_matched_in_message_metadata(team: Team) -> None:
    thread = make_thread("Agents", project=team.alpha)
    ask(thread, "Hello")
    make_run(
        thread,
        ("message-start", {"role": "assistant", "agentId": "planner"}),
        ("text-delta", {"delta": "Hi"}),
        ("message-end", {}),
    )
    assert len(export(team.alpha, "sft", agent="plan")) == 1
    assert export(team.alpha, "sft", agent="writer") == []


def test_summary_counts_rows_threads_and_fork_points(team: Team) -> None:
    regenerated_thread(team)
    regenerated_thread(team, title="Again")
    summary = datasets.summarize(team.alpha, datasets.parse_query("preferences", {}), preview=3)
    assert (summary.rows, summary.threads, summary.fork_points) == (4, 2, 2)
    assert len(summary.preview) == 3


@pytest.mark.parametrize(
    ("kind", "values", "field"),
    [
        ("stories", {}, "kind"),
        ("sft", {"format": "trl"}, "format"),
        ("preferences", {"format": "hf"}, "format"),
        ("sft", {"since": "yesterday"}, "since"),
        ("sft", {"since": "2026-02-02", "until": "2026-01-01"}, "since"),
        ("sft", {"rated": "maybe"}, "rated"),
        ("sft", {"branches": "some"}, "branches"),
        ("sft", {"dated": "deleted"}, "dated"),
        ("sft", {"model": "x" * 201}, "model"),
    ],
)
def test_bad_input_is_refused_with_the_field(kind: str, values: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        datasets.parse_query(kind, values)
    assert refused.value.details["field"] == field

"""The datasets page's preview is a table (prompt · chosen · rejected, or the messages), long
cells clipped with an expand that needs no script, never a wall of JSON (issue 26)."""

from __future__ import annotations

import re

from tests.base import Team
from tests.datasets.conftest import answer, regenerated_thread
from tests.factories import ask, make_thread
from transcripts.web.presenters.datasets import (
    CLIP_CHARS,
    Cell,
    PreviewRow,
    Said,
    cell,
    preview_table,
)

LONG = "A long answer " * 40


def test_a_trl_row_is_prompt_chosen_rejected() -> None:
    record = {
        "prompt": [{"role": "user", "content": "Hi"}],
        "chosen": [{"role": "assistant", "content": "Hello"}],
        "rejected": [{"role": "assistant", "content": "Go away"}],
        "metadata": {"threadId": "T1", "forkMessageId": "M1"},
    }
    table = preview_table("preferences", "trl", [record])
    assert table.headings == ("Prompt", "Chosen", "Rejected")
    assert table.rows == [
        PreviewRow(
            [
                Cell([Said("user", "Hi")], "", "Prompt"),
                Cell([Said("assistant", "Hello")], "", "Chosen"),
                Cell([Said("assistant", "Go away")], "", "Rejected"),
            ],
            "/t/T1/fork/M1/compare/",
            "Compare",
        )
    ]


def test_an_openai_preference_row_reads_its_input_and_outputs() -> None:
    record = {
        "input": {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]},
        "preferred_output": [{"role": "assistant", "content": "Yes"}],
        "non_preferred_output": [{"role": "assistant", "content": None}],
    }
    [row] = preview_table("preferences", "openai", [record]).rows
    prompt, chosen, rejected = row.cells
    assert row.source == ""  # no metadata: no link
    assert prompt.messages == [Said("user", "Hi")]
    assert chosen.messages == [Said("assistant", "Yes")]
    assert rejected.messages == [Said("assistant", "")]


def test_a_chat_row_shows_its_messages_tool_calls_in_words() -> None:
    record = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "See"}, {"type": "image_url"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "look", "arguments": '{"at": 1}'}}],
            },
            {"role": "tool", "content": "seen", "tool_call_id": "c1"},
        ],
        "metadata": {"threadId": "T1", "leafMessageId": "M9"},
    }
    table = preview_table("sft", "openai", [record])
    assert table.headings == ("Messages",)
    assert table.rows[0].source == "/t/T1/?leaf=M9#m-M9"
    assert table.rows[0].cells[0].messages == [
        Said("user", "See\n\n[image_url]"),
        Said("assistant", '→ look({"at": 1})'),
        Said("tool", "seen"),
    ]


def test_a_long_cell_is_clipped_a_short_one_is_not() -> None:
    long = cell([{"role": "assistant", "content": LONG}])
    assert long.clipped.startswith("assistant: A long answer") and long.clipped.endswith("…")
    assert len(long.clipped) == CLIP_CHARS
    assert cell([{"role": "user", "content": "short"}]).clipped == ""
    many = cell([{"role": "user", "content": "a"}] * 4)
    assert many.clipped and len(many.messages) == 4


def test_a_missing_or_odd_value_shows_as_no_messages() -> None:
    [row] = preview_table("preferences", "trl", [{}]).rows
    assert row == PreviewRow([Cell([], "", h) for h in ("Prompt", "Chosen", "Rejected")])
    assert cell([7]).messages == [Said("?", "7")]


def test_the_page_shows_a_table_not_json(team: Team) -> None:
    regenerated_thread(team)
    page = team.client(team.viewer).get("/p/alpha/datasets/").content.decode()
    assert '<table class="dataset-table dataset-table-wide">' in page
    headings = re.findall(r'<th scope="col">([^<]+)</th>', page)
    assert headings == ["Row", "Prompt", "Chosen", "Rejected"]
    assert '"role"' not in page and "&quot;role&quot;" not in page
    assert "Four." in page and "2 + 2 = 4" in page and "What is two plus two?" in page
    assert re.search(r'<a class="dataset-source" href="/t/\w+/fork/\w+/compare/">Compare</a>', page)


def test_a_long_cell_expands_without_a_script(team: Team) -> None:
    thread = make_thread("Essay", project=team.alpha)
    ask(thread, "Write at length")
    answer(thread, LONG)
    page = team.client(team.viewer).get("/p/alpha/datasets/", {"kind": "sft"}).content.decode()
    assert re.search(r'<details class="dataset-cell"><summary><span class="dataset-clip">', page)
    assert "Show all 2 messages" in page
    assert page.count("A long answer A long answer") >= 2  # the clip and the whole text

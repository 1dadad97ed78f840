"""Compare diffs the text a reader sees, and leaves answers too different to diff unmarked."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import ask, last_message, make_run, make_thread, say
from transcripts.models import Message, Thread
from transcripts.web.presenters.compare_text import SIMILARITY_FLOOR, rendered_text, word_diff
from transcripts.web.rendering import render_markdown

TABLE = "Sizes:\n\n| name | size |\n|---|---|\n| **pg** | 10 |\n| sqlite | 2 |\n"


def test_rendered_text_is_what_a_reader_sees_one_block_a_line() -> None:
    text = rendered_text(render_markdown(TABLE + "\n- one\n- two\n\n```\nx = 1\n  y\n```\n"))
    assert text == "Sizes:\nname size\npg 10\nsqlite 2\n• one\n• two\nx = 1\n  y"
    assert rendered_text(render_markdown("See [the docs](https://example.org/x).")) == (
        "See the docs."
    )
    # Raw HTML is text in this Markdown: it stays, and the diff escapes it.
    assert rendered_text(render_markdown("a <b>c</b>")) == "a <b>c</b>"


def test_the_diff_marks_words_not_markdown_syntax() -> None:
    before = rendered_text(render_markdown(TABLE))
    after = rendered_text(render_markdown(TABLE.replace("| 10 |", "| 12 |")))
    diff, ratio = word_diff(before, after)
    assert '<del class="diff-del">10</del><ins class="diff-add">12</ins>' in diff
    assert "|" not in diff and "**" not in diff and "---" not in diff
    assert ratio > 0.8


def _answers(*texts: str) -> tuple[Thread, Message]:
    thread = make_thread("Diffs")
    prompt = last_message(ask(thread, "Tell me"))
    for text in texts:
        say(thread, text, fork_from=prompt.id)  # the last one is active: column 1
    return thread, prompt


@pytest.mark.django_db
def test_compare_diffs_the_rendered_table_not_its_pipes(viewer_client: Client) -> None:
    thread = make_thread("Tables")
    prompt = last_message(ask(thread, "Sizes?"))
    for size in ("12", "10"):
        make_run(
            thread,
            ("text-delta", {"delta": TABLE.replace("| 10 |", f"| {size} |")}),
            fork_from=prompt.id,
        )
    response = viewer_client.get(f"/t/{thread.id}/fork/{prompt.id}/compare/")
    second = response.context["columns"][1]
    diff = next(item.diff for item in second.cards[0].parts if item.diff is not None)
    assert '<del class="diff-del">10</del><ins class="diff-add">12</ins>' in diff
    assert "|" not in diff and "**" not in diff
    assert not second.cards[0].too_different


@pytest.mark.django_db
def test_answers_too_different_to_diff_are_shown_side_by_side_unmarked(
    viewer_client: Client,
) -> None:
    thread, prompt = _answers(
        "Bananas grow in warm tropical places on tall herbaceous plants",
        "The **rain** in Spain stays mainly in the plain, my dear",
    )
    response = viewer_client.get(f"/t/{thread.id}/fork/{prompt.id}/compare/")
    card = response.context["columns"][1].cards[0]
    assert card.too_different and card.similarity is not None
    assert card.similarity < SIMILARITY_FLOOR
    html = response.content.decode()
    assert f"Too different to diff: {card.similarity}% in common" in html
    grid = html[html.index('class="compare-grid"') :]
    assert '<del class="diff-del">' not in grid and '<ins class="diff-add">' not in grid
    # Both answers read as rendered Markdown.
    assert "<p>Bananas grow in warm tropical places" in html
    assert "<strong>rain</strong>" in html


@pytest.mark.django_db
def test_similar_answers_keep_their_inline_marks(viewer_client: Client) -> None:
    thread, prompt = _answers("The sky is red and calm", "The sky is blue and calm")
    response = viewer_client.get(f"/t/{thread.id}/fork/{prompt.id}/compare/")
    card = response.context["columns"][1].cards[0]
    assert not card.too_different and card.similarity == 83
    assert "Too different to diff" not in response.content.decode()

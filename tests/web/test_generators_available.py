"""Generators that are honest (issue 27): the menus offer only what can run on this server,
the project page names the others with the reason, starting one of them is a 4xx that changes
nothing (web and API), and a failed generation stays in the conversation with Retry."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.base import Team
from tests.factories import conversation, make_run
from tests.web.conftest import message_at
from transcripts import ledger
from transcripts.generation.generators import availability, unavailable_reason
from transcripts.models import Message, Run, RunOrigin, Thread

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
NO_KEY = "OPENAI_API_KEY not set"


@pytest.fixture
def no_key(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server with no OpenAI key, no base URL and no external stream layer."""
    for name in ("OPENAI_API_KEY", "TRANSCRIPTS_OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    settings.TRANSCRIPTS_OPENAI_API_KEY = ""
    settings.TRANSCRIPTS_OPENAI_BASE_URL = ""
    settings.TRANSCRIPTS_EXTERNAL_WEBHOOK_URL = ""
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = False


@pytest.fixture
def with_key(no_key: None, settings: Any) -> None:
    """The same server with an OpenAI key and an agent that polls for external runs."""
    settings.TRANSCRIPTS_OPENAI_API_KEY = "sk-test"
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True


def _counts() -> tuple[int, int, int]:
    return Thread.objects.count(), Message.objects.count(), Run.objects.count()


# --- the registry and the menus ------------------------------------------------------------


def test_the_registry_says_why_a_generator_cannot_run(no_key: None) -> None:
    reasons = {g.name: g.reason for g in availability()}
    assert reasons["demo"] == ""
    assert reasons["openai"].startswith(NO_KEY)
    assert "TRANSCRIPTS_EXTERNAL_WEBHOOK_URL" in reasons["external"]
    assert unavailable_reason("nope").startswith("unknown generator")


def test_a_base_url_alone_makes_openai_available(no_key: None, settings: Any) -> None:
    settings.TRANSCRIPTS_OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"
    assert unavailable_reason("openai") == ""


def test_without_a_key_the_menus_offer_only_the_demo(no_key: None, editor_client: Client) -> None:
    thread = conversation(1)
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert 'value="demo:demo-1"' in html
    assert "openai:" not in html and 'value="external:' not in html
    new = editor_client.get("/new/").content.decode()
    assert 'value="demo:demo-1"' in new
    assert "openai:" not in new and 'value="external:' not in new


def test_with_a_key_the_menus_offer_openai_and_external(
    with_key: None, editor_client: Client
) -> None:
    thread = conversation(1)
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert 'value="openai:gpt-4o-mini"' in html and 'value="external:"' in html
    new = editor_client.get("/new/").content.decode()
    assert 'value="openai:gpt-4o-mini"' in new and 'value="external:"' in new


def test_a_last_choice_that_cannot_run_falls_back_to_the_demo(
    no_key: None, editor_client: Client, settings: Any
) -> None:
    thread = conversation(1)
    make_run(thread, ("text-delta", {"delta": "hi"}), generator="openai", model="gpt-4o-mini")
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert 'name="generator" value="demo"' in html  # the one-click Regenerate
    assert "gpt-4o-mini" not in html.split('name="choice"', 1)[1].split("</select>", 1)[0]


def test_the_project_page_lists_the_generators_that_are_not_offered_and_why(
    no_key: None, team: Team
) -> None:
    html = team.client(team.viewer).get(f"/p/{team.alpha.slug}/").content.decode()
    section = html.split('id="generators-title"', 1)[1].split("</section>", 1)[0]
    assert "Demo (offline)" in section and "offered" in section
    assert "not offered" in section and NO_KEY in section
    assert "External stream layer" in section


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"generator": "openai", "model": "gpt-4o-mini"},
        {"choice": "openai:gpt-4o-mini"},
        {"choice": "external:"},
    ],
)
def test_a_crafted_post_for_an_unavailable_generator_is_a_422_that_changes_nothing(
    no_key: None, editor_client: Client, data: dict[str, str]
) -> None:
    thread = conversation(1)
    answer = message_at(thread, 1)
    before = _counts()
    regenerate = editor_client.post(f"/t/{thread.id}/m/{answer.id}/regenerate/", data)
    assert regenerate.status_code == 422
    assert b"run on this server" in regenerate.content
    reply = editor_client.post(f"/t/{thread.id}/reply/", {**data, "text": "more"}, headers=HTMX)
    assert reply.status_code == 422
    assert _counts() == before


def test_a_new_thread_for_an_unavailable_generator_is_a_422_that_says_why(
    no_key: None, editor_client: Client
) -> None:
    before = _counts()
    response = editor_client.post("/new/", {"text": "Hello?", "choice": "openai:gpt-4o-mini"})
    assert response.status_code == 422
    assert NO_KEY in response.content.decode()
    assert _counts() == before


def test_retrying_a_run_whose_generator_cannot_run_is_refused(
    no_key: None, editor_client: Client
) -> None:
    thread = conversation(1)
    run = make_run(thread, commit=False, generator="openai", origin=RunOrigin.WEB)
    ledger.fail_run(run=run, error="set OPENAI_API_KEY")
    before = _counts()
    assert editor_client.post(f"/runs/{run.id}/retry/").status_code == 422
    assert _counts() == before
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert f'action="/runs/{run.id}/retry/"' not in html
    assert "can't be retried here: " + NO_KEY in html


# --- a failed generation stays in the conversation ------------------------------------------


def _failed(thread: Thread, *words: str) -> Run:
    """A demo answer to the thread's last question that failed after streaming words."""
    question = message_at(thread, 0)
    deltas = [("text-delta", {"delta": w + " "}) for w in words]
    run = make_run(
        thread,
        *deltas,
        fork_from=question.id,
        commit=False,
        generator="demo",
        origin=RunOrigin.WEB,
    )
    return ledger.fail_run(run=run, error={"message": "the model went away", "code": "gone"})


def test_a_failed_run_with_no_output_stays_after_a_reload_with_its_error_and_retry(
    editor_client: Client,
) -> None:
    thread = conversation(1)
    run = _failed(thread)
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert f'id="run-{run.id}"' in html and "Failed branch" in html
    assert "the model went away" in html and "Nothing was generated" in html
    assert "partial output" not in html
    assert f'action="/runs/{run.id}/retry/"' in html


def test_partial_output_kept_is_said_only_when_something_was_kept(editor_client: Client) -> None:
    thread = conversation(1)
    run = _failed(thread, "so", "far")
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert f'id="run-{run.id}"' in html and "so far" in html
    assert "The partial output above is kept" in html


def test_a_failed_run_leaves_the_conversation_once_it_is_retried(editor_client: Client) -> None:
    thread = conversation(1)
    run = _failed(thread)
    editor_client.post(f"/runs/{run.id}/retry/")
    ledger.fail_run(run=Run.objects.get(metadata__retryOf=run.id), error="again")
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert f'id="run-{run.id}"' not in html  # the newer attempt is shown instead
    assert "again" in html

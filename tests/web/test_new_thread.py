"""New thread (`/new/`): who may start one, where it goes, what it holds, and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import Team
from tests.factories import make_thread
from transcripts.errors import InvalidInput
from transcripts.generation import start as generation
from transcripts.generation.generators import get_generator
from transcripts.ledger.projects import choose_project, set_member
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db

FORM = {"title": "Bike or bus?", "text": "Should I bike to work when it drizzles?"}


def _post(team: Team, user: Any, **fields: str) -> Any:
    data = {**FORM, "choice": "demo:demo-1", **fields}
    return team.client(user).post("/new/", data)


# --- who may ---------------------------------------------------------------------------------


def test_an_anonymous_visitor_is_sent_to_the_login_page(client: Any) -> None:
    response = client.get("/new/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert client.post("/new/", FORM).status_code == 302
    assert not Thread.objects.exists()


def test_someone_in_no_project_gets_the_friendly_page(team: Team) -> None:
    for response in (team.client(team.stranger).get("/new/"), _post(team, team.stranger)):
        assert response.status_code == 200
        assert "You are not in a project yet" in response.content.decode()
    assert not Thread.objects.exists()


def test_a_viewer_is_refused_with_the_role_it_takes_and_nothing_is_created(team: Team) -> None:
    page = team.client(team.viewer).get("/new/")
    assert page.status_code == 403
    assert "you need the editor role" in page.content.decode()
    response = _post(team, team.viewer)
    assert response.status_code == 403
    html = response.content.decode()
    assert "To start a thread in Alpha you need the editor role" in html
    assert "yours is viewer" in html
    assert not Thread.objects.exists()


def test_an_editor_starts_a_thread_in_the_current_project_not_another(team: Team) -> None:
    # The editor is in both projects; alpha is the one they are looking at.
    set_member(project=team.beta, user=team.editor, role="editor")
    choose_project(user=team.editor, project=team.alpha)
    response = _post(team, team.editor)
    thread = Thread.objects.get()
    assert thread.project_id == team.alpha.pk
    assert not Thread.objects.filter(project=team.beta).exists()
    run = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert response.status_code == 302
    assert response["Location"] == f"/t/{thread.id}/#run-{run.id}"

    choose_project(user=team.editor, project=team.beta)
    _post(team, team.editor, title="In beta")
    assert Thread.objects.get(title="In beta").project_id == team.beta.pk


# --- what it makes ---------------------------------------------------------------------------


def test_the_thread_holds_the_committed_question_and_a_queued_answer(team: Team) -> None:
    _post(team, team.editor, choice="demo:demo-brief")
    thread = Thread.objects.get()
    assert thread.title == "Bike or bus?"
    question = Message.objects.get(thread=thread)
    assert (question.role, question.depth, question.active) == ("user", 0, True)
    assert question.parts == [{"type": "text", "text": FORM["text"]}]
    assert question.run.status == RunStatus.COMMITTED
    assert thread.head_id == question.id
    answer = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert (answer.generator, answer.model, answer.fork_from_id) == (
        "demo",
        "demo-brief",
        question.id,
    )


def test_the_models_of_every_configured_generator_can_answer(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_OPENAI_API_KEY = "sk-test"
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    model = get_generator("openai").models()[0]
    _post(team, team.editor, choice=f"openai:{model}", title="Asked openai")
    _post(team, team.editor, choice="external:", title="Asked an agent")
    openai = Run.objects.get(thread__title="Asked openai", status=RunStatus.QUEUED)
    assert (openai.generator, openai.model) == ("openai", model)
    external = Run.objects.get(thread__title="Asked an agent", status=RunStatus.QUEUED)
    assert external.generator == "external"


def test_without_a_title_the_thread_is_named_after_its_first_message(team: Team) -> None:
    long_text = "Which of these three database designs " + "scales better " * 10
    _post(team, team.editor, title="  ", text=long_text)
    title = Thread.objects.get().title
    assert title.startswith("Which of these three database designs scales better")
    assert title.endswith("…") and len(title) <= 81


def test_the_conversation_it_opens_shows_the_question_and_the_live_answer(team: Team) -> None:
    response = _post(team, team.editor)
    page = team.client(team.editor).get(response["Location"].split("#")[0])
    html = page.content.decode()
    assert FORM["text"] in html
    run = Run.objects.get(status=RunStatus.QUEUED)
    assert f'id="run-{run.id}"' in html
    assert "run-live is-open" in html


def test_starting_a_thread_is_all_or_nothing(team: Team) -> None:
    with pytest.raises(InvalidInput):
        generation.start_thread(project=team.alpha, text="Hello?", generator="no-such-generator")
    with pytest.raises(InvalidInput):
        generation.start_thread(project=team.alpha, text="  ")
    assert not Thread.objects.exists()
    assert not Run.objects.exists()


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"text": ""}, "The first message is empty"),
        ({"text": "   \n  "}, "The first message is empty"),
        ({"choice": ""}, "This field is required"),
        ({"choice": "nope:demo-1"}, "Choose one of the listed models"),
        ({"choice": "demo:gpt-imaginary"}, "Choose one of the listed models"),
        ({"title": "x" * 501}, "at most 500 characters"),
    ],
)
def test_bad_input_is_a_422_with_the_form_kept_and_nothing_created(
    team: Team, fields: dict[str, str], error: str
) -> None:
    response = _post(team, team.editor, **fields)
    assert response.status_code == 422
    html = response.content.decode()
    assert error in html
    assert 'class="new-thread-form' in html
    if "text" not in fields:
        assert FORM["text"] in html  # what was typed is still there
    assert not Thread.objects.exists()
    assert not Run.objects.exists()


# --- the form and the way to it --------------------------------------------------------------


def test_the_form_offers_each_generator_s_models_the_demo_first(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_OPENAI_API_KEY = "sk-test"
    html = team.client(team.editor).get("/new/").content.decode()
    assert '<optgroup label="Demo (offline)">' in html
    assert '<option value="demo:demo-1" selected>' in html
    assert '<option value="demo:demo-brief">' in html
    assert f'<option value="openai:{get_generator("openai").models()[0]}">' in html
    assert "in Alpha" in html


def test_the_header_and_the_list_link_to_a_new_thread_for_editors(team: Team) -> None:
    empty = team.client(team.editor).get("/").content.decode()
    assert "Start one</a>" in empty
    make_thread("Already here", project=team.alpha)
    listing = team.client(team.editor).get("/").content.decode()
    assert listing.count('href="/new/"') == 2  # the header and the list's heading
    viewer_listing = team.client(team.viewer).get("/").content.decode()
    assert viewer_listing.count('href="/new/"') == 1  # the header only; the page says why


def test_every_page_links_the_icon_and_the_api_docs(team: Team, client: Any) -> None:
    html = team.client(team.viewer).get("/").content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in html
    assert 'class="topnav-docs" href="/api/v1/docs"' in html
    icon = client.get("/static/img/favicon.svg")
    assert icon.status_code == 200
    assert b"<svg" in b"".join(icon.streaming_content)
    fallback = client.get("/favicon.ico")
    assert fallback.status_code in (301, 302)
    assert fallback["Location"] == "/static/img/favicon.svg"

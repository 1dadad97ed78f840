"""One access module for every page: session expiry under htmx, who may see, who may act."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.template import engines
from django.test import Client
from django.urls import NoReverseMatch, reverse

from tests.factories import ask, last_message, make_run, make_thread, say
from tests.web.conftest import long_thread, message_at
from transcripts.errors import PermissionDenied
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import ImportJob, Message, Report, Run, RunStatus, Thread
from transcripts.permissions import Access, Role
from transcripts.web import access

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def _fork() -> tuple[Thread, Message, Run]:
    """A prompt answered twice; returns the thread, the prompt and the superseded run."""
    thread = make_thread("Two answers")
    prompt = last_message(ask(thread, "Pick a number"))
    first = say(thread, "seven", fork_from=prompt.id)
    say(thread, "three", fork_from=prompt.id)
    first.refresh_from_db()
    assert first.status == RunStatus.SUPERSEDED
    thread.refresh_from_db()
    return thread, prompt, first


# --- session expiry under htmx -----------------------------------------------------------

# Every GET fragment that htmx polls or swaps in; {t} thread, {m} a message, {r} an open run,
# {j} an import job of nobody.
FRAGMENTS = [
    "/runs/{r}/live/",
    "/t/{t}/?dir=before&from={m}",
    "/t/{t}/?dir=after&from={m}",
    "/t/{t}/?leaf={m}",
    "/?cursor=abc",
    "/?q=seven",
    "/t/{t}/fork/{m}/compare/",
    "/compare/?a={r}&b={r}",
    "/t/{t}/tree/",
    "/runs/{r}/?after=1",
    "/t/{t}/m/{m}/report/",
    "/moderation/?offset=50",
    "/import/{j}/",
]


@pytest.mark.parametrize("path", FRAGMENTS)
def test_an_htmx_fragment_after_the_session_ended_reloads_into_the_login_page(
    outsider: Client, path: str
) -> None:
    thread, prompt, _ = _fork()
    run = make_run(thread, ("text-delta", {"delta": "typing"}), fork_from=prompt.id, commit=False)
    job = ImportJob.objects.create(filename="x.json", size=1, project=default_project())
    url = path.format(t=thread.id, m=prompt.id, r=run.id, j=job.id)
    page = f"/t/{thread.id}/"
    response = outsider.get(url, headers={**HTMX, "HX-Current-URL": f"http://testserver{page}"})
    # Not a redirect htmx would follow and swap into the fragment: a full-page navigation.
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/accounts/login/?next={page}"
    assert b"seven" not in response.content and b"typing" not in response.content


def test_the_live_block_of_an_expired_session_is_a_client_redirect_not_a_login_fragment(
    outsider: Client,
) -> None:
    thread, prompt, _ = _fork()
    run = make_run(thread, ("text-delta", {"delta": "typing"}), fork_from=prompt.id, commit=False)
    response = outsider.get(f"/runs/{run.id}/live/", headers=HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith("/accounts/login/?next=")
    assert b'name="password"' not in response.content
    plain = outsider.get(f"/runs/{run.id}/live/")  # without htmx: the usual redirect
    assert plain.status_code == 302 and "login" in plain["Location"]


@pytest.mark.parametrize(
    "path",
    [
        "/runs/{r}/restore/",
        "/runs/{r}/rate/",
        "/runs/{r}/cancel/",
        "/moderation/reports/1/close/",
        "/import/",
    ],
)
def test_an_htmx_action_after_the_session_ended_reloads_into_the_login_page(
    outsider: Client, path: str
) -> None:
    _, _, superseded = _fork()
    response = outsider.post(path.format(r=superseded.id), headers=HTMX)
    assert response.status_code == 200 and "/accounts/login/" in response["HX-Redirect"]
    assert Run.objects.get(pk=superseded.pk).status == RunStatus.SUPERSEDED


# --- one restore endpoint ----------------------------------------------------------------


def test_the_conversation_and_the_compare_page_both_restore_through_the_runs_endpoint(
    editor_client: Client,
) -> None:
    thread, prompt, superseded = _fork()
    action = f'action="/runs/{superseded.id}/restore/"'
    old_answer = last_message(superseded)
    conversation_page = editor_client.get(f"/t/{thread.id}/?leaf={old_answer.id}")
    compare_url = f"/t/{thread.id}/fork/{prompt.id}/compare/"
    compare_page = editor_client.get(compare_url)
    assert action in conversation_page.content.decode()
    assert action in compare_page.content.decode()
    with pytest.raises(NoReverseMatch):
        reverse("restore_branch", args=[thread.id, superseded.id])
    assert editor_client.post(f"/t/{thread.id}/restore/{superseded.id}/").status_code == 404
    # Each page gets back to itself.
    response = editor_client.post(f"/runs/{superseded.id}/restore/", {"next": compare_url})
    assert response.status_code == 303 and response["Location"] == compare_url
    superseded.refresh_from_db()
    assert superseded.status == RunStatus.COMMITTED
    rival = Run.objects.get(thread=thread, status=RunStatus.SUPERSEDED)
    back = f"/t/{thread.id}/"
    response = editor_client.post(f"/runs/{rival.id}/restore/", {"next": back}, headers=HTMX)
    assert response.status_code == 303 and response["Location"] == back
    rival.refresh_from_db()
    assert rival.status == RunStatus.COMMITTED


def test_the_restore_endpoint_refuses_on_a_locked_or_hidden_thread_for_both_pages(
    editor_client: Client, moderator_client: Client
) -> None:
    thread, prompt, superseded = _fork()
    url = f"/runs/{superseded.id}/restore/"
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    for back in (f"/t/{thread.id}/", f"/t/{thread.id}/fork/{prompt.id}/compare/"):
        fragment = editor_client.post(url, {"next": back}, headers=HTMX)
        assert fragment.status_code == 409 and fragment["X-Refusal"] == "1"
        assert fragment["HX-Push-Url"] == "false"  # the form's page stays in the history
        assert b"This thread is locked" in fragment.content
    Thread.objects.filter(pk=thread.pk).update(locked=False, hidden=True)
    response = moderator_client.post(url, {"next": f"/t/{thread.id}/"})
    assert response.status_code == 409 and b"hidden by moderation" in response.content
    compare_page = moderator_client.get(f"/t/{thread.id}/fork/{prompt.id}/compare/")
    assert f'action="{url}"' not in compare_page.content.decode()
    assert Run.objects.get(pk=superseded.pk).status == RunStatus.SUPERSEDED


# --- no template tag runs queries --------------------------------------------------------


def test_the_template_tags_are_gone() -> None:
    libraries = engines["django"].engine.template_libraries  # type: ignore[attr-defined]
    assert not {"generation_ui", "transfer_ui"} & set(libraries)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("transcripts.web.templatetags")


def test_the_conversation_renders_with_the_same_queries_for_10_and_100_messages(
    editor_client: Client, django_assert_max_num_queries: Any
) -> None:
    counts = []
    for size in (10, 100):
        thread = long_thread(size)
        # Everything the tags used to look up: the last choice, an open run, the export menu.
        fork = message_at(thread, size - 2)
        make_run(thread, ("text-delta", {"delta": "live"}), fork_from=fork.id, commit=False)
        with django_assert_max_num_queries(30) as captured:
            html = editor_client.get(f"/t/{thread.id}/").content.decode()
        assert "/regenerate/" in html and "sse-connect" in html and "export?format=" in html
        counts.append(len(captured))
    assert counts[0] == counts[1], counts


# --- who may see, who may act ------------------------------------------------------------


def test_a_thread_message_and_run_of_a_hidden_thread_exist_only_for_moderators(
    viewer_client: Client, moderator_client: Client
) -> None:
    thread, prompt, superseded = _fork()
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    for path in (
        f"/t/{thread.id}/",
        f"/t/{thread.id}/m/{prompt.id}/report/",
        f"/runs/{superseded.id}/",
        f"/runs/{superseded.id}/live/",
    ):
        assert viewer_client.get(path).status_code == 404, path
        assert moderator_client.get(path).status_code in (200, 302), path


def test_a_reader_who_may_not_edit_gets_a_403_that_says_why_and_nothing_changes(
    viewer_client: Client,
) -> None:
    thread, prompt, superseded = _fork()
    answer = message_at(thread, 1)
    page = viewer_client.get(f"/t/{thread.id}/")
    assert page.status_code == 200  # reading is fine
    # The page offers no action the role may not take, and says why.
    html = page.content.decode()
    assert "/regenerate/" not in html and 'id="reply"' not in html
    assert "Your role in this project is viewer" in html
    runs = Run.objects.count()
    for url, data in (
        (f"/t/{thread.id}/m/{answer.id}/regenerate/", {"generator": "demo"}),
        (f"/t/{thread.id}/reply/", {"generator": "demo", "text": "more"}),
        (f"/runs/{superseded.id}/restore/", {}),
        (f"/runs/{superseded.id}/rate/", {"preferred": "on"}),
    ):
        response = viewer_client.post(url, data)
        assert response.status_code == 403, url
        assert b"you need the editor role in this project; yours is viewer" in response.content
        fragment = viewer_client.post(url, data, headers=HTMX)
        assert fragment.status_code == 403 and fragment["X-Refusal"] == "1"
        assert b"<html" not in fragment.content and b"editor role" in fragment.content
    assert Run.objects.count() == runs
    assert Run.objects.get(pk=superseded.pk).status == RunStatus.SUPERSEDED
    report = viewer_client.post(f"/t/{thread.id}/m/{prompt.id}/report/", {"reason": "spam"})
    assert report.status_code == 303
    assert Report.objects.count() == 1  # a viewer may still report


def test_require_role_raises_a_403_naming_the_role_needed_and_the_one_held() -> None:
    access.require_role(Access(role=Role.EDITOR), Role.EDITOR, "reply")
    access.require_role(Access(role=Role.ADMIN), Role.EDITOR, "reply")
    with pytest.raises(PermissionDenied, match=r"need the moderator role.*yours is editor"):
        access.require_role(Access(role=Role.EDITOR), Role.MODERATOR, "hide threads")
    with pytest.raises(PermissionDenied, match="yours is no role"):
        access.require_role(Access(role=None), Role.VIEWER, "read")


def test_the_moderation_queue_asks_the_policy_not_staff_status(
    viewer: User, viewer_client: Client
) -> None:
    User.objects.filter(pk=viewer.pk).update(is_staff=True)
    assert viewer_client.get("/moderation/").status_code == 403
    set_member(project=default_project(), user=viewer, role="moderator")
    assert viewer_client.get("/moderation/").status_code == 200


def test_an_import_job_is_found_only_by_the_user_who_started_it(
    viewer: User, viewer_client: Client, moderator_client: Client
) -> None:
    job = ImportJob.objects.create(
        filename="mine.json", size=1, user=viewer, project=default_project()
    )
    assert viewer_client.get(f"/import/{job.id}/").status_code == 200
    assert moderator_client.get(f"/import/{job.id}/").status_code == 404
    assert "mine.json" in viewer_client.get("/import/").content.decode()
    assert "mine.json" not in moderator_client.get("/import/").content.decode()

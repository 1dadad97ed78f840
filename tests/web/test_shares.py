"""Share links on the pages: the public page of one branch (no login, nothing else of the app,
not for search engines, the same 404 whenever a link does not work), and the conversation's
Share panel where editors create, list and revoke links."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from tests.ledger.test_shares import Branched, branched_thread
from tests.web.conftest import long_thread
from transcripts import ledger
from transcripts.ledger import moderation
from transcripts.ledger.deletion import delete_threads
from transcripts.models import AuditRecord, Message, ShareLink
from transcripts.projector import REDACTION_TEXT

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
FIRST = "Marseille, said the first answer"
SECOND = "Paris, said the second answer"
QUESTION = "Which city is the capital of France?"


@pytest.fixture
def branched(team: Team) -> Branched:
    return branched_thread(team.alpha)


def _page(secret: str) -> Any:
    return Client().get(reverse("shared", args=[secret]))


def _secret_in(html: str) -> str:
    match = re.search(r"/s/([A-Za-z0-9_-]{43})/", html)
    assert match is not None, html
    return match.group(1)


# --- the public page -------------------------------------------------------------------------


def test_the_page_holds_exactly_the_chosen_branch_and_no_other(
    team: Team, branched: Branched
) -> None:
    _, secret = ledger.create_share(
        thread=branched.thread, user=team.editor, leaf_id=branched.first.id
    )

    response = _page(secret)

    assert response.status_code == 200
    html = response.content.decode()
    assert QUESTION in html and FIRST in html
    assert SECOND not in html  # the active answer belongs to another branch
    assert branched.second.id not in html
    assert html.index(QUESTION) < html.index(FIRST)


def test_the_page_of_the_active_branch_leaves_the_alternative_out(
    team: Team, branched: Branched
) -> None:
    _, secret = ledger.create_share(thread=branched.thread, user=team.editor)

    html = _page(secret).content.decode()

    assert SECOND in html and FIRST not in html


def test_the_page_asks_search_engines_and_other_sites_to_keep_out(
    team: Team, branched: Branched
) -> None:
    _, secret = ledger.create_share(thread=branched.thread, user=team.editor)

    response = _page(secret)

    assert response["X-Robots-Tag"] == "noindex, nofollow"
    assert response["Referrer-Policy"] == "no-referrer"
    assert "no-store" in response["Cache-Control"]
    assert '<meta name="robots" content="noindex, nofollow">' in response.content.decode()


def test_the_page_has_no_buttons_menus_or_links_into_the_app_and_only_the_sites_script(
    team: Team, branched: Branched
) -> None:
    run = branched.second.run_id
    _, secret = ledger.create_share(thread=branched.thread, user=team.editor)

    html = _page(secret).content.decode()

    for absent in ("<a ", "<form", "<button", "style=", "msg-menu", "switcher"):
        assert absent not in html, absent
    # app.js, for the "Load image" buttons of remote images (tests/web/test_remote_images.py).
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/js/app.js" defer>']
    assert run not in html  # no run timeline, no trace link
    assert "csrfmiddlewaretoken" not in html


def test_redacted_content_shows_the_marker_not_the_text(team: Team, branched: Branched) -> None:
    moderation.redact_message(user=team.owner, message=branched.first, reason="personal data")
    _, secret = ledger.create_share(
        thread=branched.thread, user=team.editor, leaf_id=branched.first.id
    )

    html = _page(secret).content.decode()

    assert REDACTION_TEXT in html
    assert FIRST not in html
    assert ">redacted<" in html


def _gone(response: Any) -> bytes:
    assert response.status_code == 404
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    return bytes(response.content)


def test_every_link_that_does_not_work_gets_the_same_404(team: Team) -> None:
    unknown = "A" * 43
    bodies = {"unknown": _gone(_page(unknown)), "malformed": _gone(_page("nope"))}

    revoked = branched_thread(team.alpha, "Revoked")
    share, secret = ledger.create_share(thread=revoked.thread, user=team.editor)
    ledger.revoke_share(share=share, user=team.editor)
    bodies["revoked"] = _gone(_page(secret))

    expired = branched_thread(team.alpha, "Expired")
    share, secret = ledger.create_share(
        thread=expired.thread, user=team.editor, expires_at=timezone.now() + timedelta(hours=1)
    )
    ShareLink.objects.filter(pk=share.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    bodies["expired"] = _gone(_page(secret))

    hidden = branched_thread(team.alpha, "Hidden")
    _, secret = ledger.create_share(thread=hidden.thread, user=team.editor)
    moderation.hide_thread(user=team.moderator, thread=hidden.thread)
    bodies["hidden"] = _gone(_page(secret))

    locked = branched_thread(team.alpha, "Locked and hidden")
    _, secret = ledger.create_share(thread=locked.thread, user=team.editor)
    moderation.lock_thread(user=team.moderator, thread=locked.thread)
    moderation.hide_thread(user=team.moderator, thread=locked.thread)
    bodies["locked and hidden"] = _gone(_page(secret))

    deleted = branched_thread(team.alpha, "Deleted")
    _, secret = ledger.create_share(thread=deleted.thread, user=team.editor)
    delete_threads([deleted.thread.id])
    bodies["deleted"] = _gone(_page(secret))

    assert len(set(bodies.values())) == 1, bodies.keys()


def test_a_locked_but_visible_thread_is_still_shared(team: Team, branched: Branched) -> None:
    _, secret = ledger.create_share(thread=branched.thread, user=team.editor)
    moderation.lock_thread(user=team.moderator, thread=branched.thread)

    assert _page(secret).status_code == 200


def test_the_page_reads_as_many_queries_for_a_long_branch_as_for_a_short_one(db: None) -> None:
    counts = []
    for length in (4, 300):
        _, secret = ledger.create_share(thread=long_thread(length, f"{length}"), user=None)
        with CaptureQueriesContext(connection) as queries:
            assert _page(secret).status_code == 200
        counts.append(len(queries))

    assert counts[0] == counts[1]


@pytest.mark.parametrize("active", [True, False])
def test_a_long_branch_is_read_page_by_page_without_leaving_it(db: None, active: bool) -> None:
    thread = long_thread(120)
    root = Message.objects.get(thread=thread, depth=0)
    leaf = Message.objects.get(thread=thread, depth=119)
    if not active:  # a new branch from the root: the long one becomes an alternative
        say(thread, "a short other branch", fork_from=root.id)
        leaf.refresh_from_db()
        assert not leaf.active
    _, secret = ledger.create_share(thread=thread, user=None, leaf_id=leaf.id)

    def numbers(start: str | None) -> tuple[list[int], str]:
        params = {"start": start} if start is not None else {}
        html = Client().get(reverse("shared", args=[secret]), params).content.decode()
        return [int(n) for n in re.findall(r">message number (\d+)<", html)], html

    first, html = numbers(None)
    assert first == list(range(50))
    assert 'href="?start=50"' in html and "Messages 1\N{EN DASH}50 of 120" in html
    assert "a short other branch" not in html
    second, html = numbers("50")
    assert second == list(range(50, 100))
    assert 'href="?start=0"' in html and 'href="?start=100"' in html
    assert numbers("100")[0] == list(range(70, 120))  # the last page is a whole one
    assert numbers("-5")[0] == first
    assert numbers("nonsense")[0] == first
    assert numbers("99999999999999999999")[0] == list(range(70, 120))


def test_opening_a_link_writes_nothing(team: Team, branched: Branched) -> None:
    _, secret = ledger.create_share(thread=branched.thread, user=team.editor)
    audits = AuditRecord.objects.count()

    _page(secret)
    Client().head(reverse("shared", args=[secret]))

    assert AuditRecord.objects.count() == audits
    assert Client().post(reverse("shared", args=[secret])).status_code == 405


# --- the Share panel of the conversation ------------------------------------------------------


def test_editors_see_the_share_button_viewers_do_not(team: Team, branched: Branched) -> None:
    url = reverse("conversation", args=[branched.thread.id])

    editor_page = team.client(team.editor).get(url).content.decode()
    viewer_page = team.client(team.viewer).get(url).content.decode()

    panel = reverse("thread_shares", args=[branched.thread.id])
    assert f'href="{panel}"' in editor_page and "js/shares.js" in editor_page
    assert panel not in viewer_page and 'id="share-slot"' not in viewer_page


def test_the_panel_is_a_404_for_an_outsider_and_a_403_for_a_viewer(
    team: Team, branched: Branched
) -> None:
    share, _ = ledger.create_share(thread=branched.thread, user=team.editor)
    panel = reverse("thread_shares", args=[branched.thread.id])
    revoke = reverse("share_revoke", args=[branched.thread.id, share.id])

    for user in (team.outsider, team.stranger):
        client = team.client(user)
        assert client.get(panel).status_code == 404
        assert client.post(panel, {"leaf": branched.second.id}).status_code == 404
        assert client.post(revoke).status_code == 404
    viewer = team.client(team.viewer)
    refused = viewer.get(panel)
    assert refused.status_code == 403
    assert "editor role" in refused.content.decode()
    assert viewer.post(panel, {"leaf": branched.second.id}).status_code == 403
    assert viewer.post(revoke).status_code == 403
    assert Client().get(panel).status_code == 302  # to the login page

    assert ShareLink.objects.count() == 1
    assert ShareLink.objects.get().revoked_at is None


def test_an_editor_shares_the_branch_being_read_and_sees_the_link_once(
    team: Team, branched: Branched
) -> None:
    client = team.client(team.editor)
    panel = reverse("thread_shares", args=[branched.thread.id])
    # The reader switched to the first answer with htmx: the page's address says so.
    conversation = reverse("conversation", args=[branched.thread.id])
    reading = {
        **HTMX,
        "HX-Current-URL": f"http://testserver{conversation}?leaf={branched.first.id}",
    }

    form = client.get(panel, headers=reading)
    assert form.status_code == 200
    assert f'name="leaf" value="{branched.first.id}"' in form.content.decode()
    assert "<html" not in form.content.decode()  # the panel alone, for the slot

    created = client.post(panel, {"leaf": branched.first.id, "expires": "7"}, headers=HTMX)

    assert created.status_code == 201
    html = created.content.decode()
    secret = _secret_in(html)
    assert 'data-copy="http://testserver/s/' in html
    share = ShareLink.objects.get()
    assert share.leaf_id == branched.first.id and share.created_by == team.editor
    assert share.expires_at is not None
    assert timedelta(days=6) < share.expires_at - timezone.now() <= timedelta(days=7)
    page = _page(secret).content.decode()
    assert FIRST in page and SECOND not in page
    # Listed afterwards, but never shown again.
    again = client.get(panel, headers=HTMX).content.decode()
    assert f'id="share-{share.id}"' in again and secret not in again


def test_an_alternative_branch_is_shared_down_to_its_latest_message(team: Team) -> None:
    thread = make_thread("Deep", project=team.alpha)
    prompt = last_message(ask(thread, "first question"))
    old_answer = last_message(say(thread, "old answer"))
    ask(thread, "follow-up question")
    old_end = last_message(say(thread, "old follow-up answer"))
    new_answer = last_message(say(thread, "new answer", fork_from=prompt.id))
    client = team.client(team.editor)
    panel = reverse("thread_shares", args=[thread.id])

    # Reading the old branch from its first answer: the page shows it down to its end.
    alternative = client.get(panel, {"leaf": old_answer.id}).content.decode()
    # Reading through the prompt, which is on the active path: the branch ends at the head.
    active = client.get(panel, {"leaf": prompt.id}).content.decode()

    assert f'name="leaf" value="{old_end.id}"' in alternative
    assert "<html" in alternative  # without htmx, a page of its own
    assert f'name="leaf" value="{new_answer.id}"' in active


def test_an_editor_revokes_a_link_and_its_page_is_gone(team: Team, branched: Branched) -> None:
    share, secret = ledger.create_share(thread=branched.thread, user=team.owner)
    revoke = reverse("share_revoke", args=[branched.thread.id, share.id])

    response = team.client(team.editor).post(revoke, {"leaf": branched.second.id}, headers=HTMX)

    assert response.status_code == 200
    assert "revoked" in response.content.decode()
    assert _page(secret).status_code == 404
    record = AuditRecord.objects.get(action="revoke_share")
    assert record.actor == team.editor and record.details["via"] == "web"


def test_a_link_of_another_thread_cannot_be_revoked_through_this_one(
    team: Team, branched: Branched
) -> None:
    other = branched_thread(team.alpha, "Other")
    share, _ = ledger.create_share(thread=other.thread, user=team.editor)

    response = team.client(team.editor).post(
        reverse("share_revoke", args=[branched.thread.id, share.id])
    )

    assert response.status_code == 404
    assert ShareLink.objects.get().revoked_at is None


def test_a_moderator_sees_and_revokes_the_links_of_a_hidden_thread_but_cannot_share_it(
    team: Team, branched: Branched
) -> None:
    share, _ = ledger.create_share(thread=branched.thread, user=team.editor)
    moderation.hide_thread(user=team.moderator, thread=branched.thread)
    client = team.client(team.moderator)
    panel = reverse("thread_shares", args=[branched.thread.id])

    html = client.get(panel, headers=HTMX).content.decode()
    assert f'id="share-{share.id}"' in html and "cannot be shared" in html
    assert client.post(panel, {"leaf": branched.second.id}).status_code == 409
    assert team.client(team.editor).get(panel).status_code == 404  # hidden from editors

    revoked = client.post(reverse("share_revoke", args=[branched.thread.id, share.id]))
    assert revoked.status_code == 303
    assert ShareLink.objects.get().revoked_by == team.moderator


def test_a_bad_form_changes_nothing(team: Team, branched: Branched) -> None:
    client = team.client(team.editor)
    panel = reverse("thread_shares", args=[branched.thread.id])

    assert client.post(panel, {"leaf": branched.second.id, "expires": "999"}).status_code == 422
    assert client.post(panel, {}).status_code == 422
    assert client.post(panel, {"leaf": "01JB8ZT6QK5X4V3N2M1P0R9S8T"}).status_code == 404

    assert ShareLink.objects.count() == 0

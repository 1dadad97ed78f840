"""The current project (list, search, switcher, imports), the project page and its admin forms."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.base import Team
from tests.factories import ask, make_thread, say
from transcripts.ledger.projects import set_member
from transcripts.models import ApiToken, AuditRecord, ImportJob, Membership, Profile, Thread

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"


def _thread(team: Team, slug: str, words: str) -> Thread:
    thread = make_thread(f"{words} title", project=getattr(team, slug))
    ask(thread, f"a question about {words}")
    say(thread, f"an answer about {words}")
    return thread


# --- the list and search show the current project ----------------------------------------


def test_members_of_b_see_nothing_of_a_in_the_list_and_search(team: Team) -> None:
    pelican = _thread(team, "alpha", "pelican")
    _thread(team, "beta", "walrus")
    beta = team.client(team.outsider)
    for url in ("/", "/?q=pelican", "/?q=answer", "/?status=hidden", "/?sort=title"):
        html = beta.get(url).content.decode()
        assert "pelican title" not in html and pelican.id not in html, url
        assert "an answer about pelican" not in html, url
    assert "walrus title" in beta.get("/?q=walrus").content.decode()
    alpha = team.client(team.viewer)
    assert "walrus title" not in alpha.get("/?q=walrus").content.decode()
    assert "pelican title" in alpha.get("/?q=pelican").content.decode()


def test_hidden_threads_of_the_project_are_listed_for_its_moderators_only(team: Team) -> None:
    hidden = _thread(team, "alpha", "secret")
    Thread.objects.filter(pk=hidden.pk).update(hidden=True)
    assert "secret title" not in team.client(team.editor).get("/").content.decode()
    assert "secret title" not in team.client(team.editor).get("/?status=hidden").content.decode()
    assert "secret title" in team.client(team.moderator).get("/?status=hidden").content.decode()


def test_the_switcher_changes_the_list_and_remembers_the_project_per_user(team: Team) -> None:
    _thread(team, "alpha", "pelican")
    _thread(team, "beta", "walrus")
    set_member(project=team.beta, user=team.viewer, role="viewer")
    client = team.client(team.viewer)
    page = client.get("/").content.decode()  # Alpha comes first by name
    assert "pelican title" in page and "walrus" not in page
    assert 'value="alpha" class="menu-choice is-current" aria-current="true"' in page
    assert 'value="beta" class="menu-choice"' in page
    response = client.post("/projects/switch/", {"project": "beta"})
    assert response.status_code == 303 and response["Location"] == "/"
    page = client.get("/").content.decode()
    assert "walrus title" in page and "pelican" not in page
    assert 'value="beta" class="menu-choice is-current" aria-current="true"' in page
    # Remembered for the user (a new session too), not for others.
    assert Profile.objects.get(user=team.viewer).current_project == team.beta
    again = User.objects.get(pk=team.viewer.pk)
    fresh = type(client)()
    fresh.force_login(again)
    assert "walrus title" in fresh.get("/").content.decode()
    assert "pelican title" in team.client(team.editor).get("/").content.decode()
    # A thread of the other project still opens by its address.
    alpha_thread = Thread.objects.get(project=team.alpha)
    assert client.get(f"/t/{alpha_thread.id}/").status_code == 200


def test_switching_to_a_project_one_does_not_belong_to_is_a_404_and_changes_nothing(
    team: Team,
) -> None:
    client = team.client(team.viewer)
    assert client.post("/projects/switch/", {"project": "beta"}).status_code == 404
    assert client.post("/projects/switch/", {"project": "nope"}).status_code == 404
    assert client.post("/projects/switch/", {}).status_code == 404
    assert client.get("/projects/switch/").status_code == 405
    assert not Profile.objects.filter(user=team.viewer).exists()


def test_a_remembered_project_one_left_falls_back_to_one_still_readable(team: Team) -> None:
    _thread(team, "alpha", "pelican")
    _thread(team, "beta", "walrus")
    set_member(project=team.beta, user=team.viewer, role="viewer")
    client = team.client(team.viewer)
    client.post("/projects/switch/", {"project": "beta"})
    Membership.objects.filter(project=team.beta, user=team.viewer).delete()
    page = client.get("/").content.decode()
    assert "pelican title" in page and "walrus" not in page


def test_someone_in_no_project_is_told_so_not_shown_a_404(team: Team) -> None:
    client = team.client(team.stranger)
    for url in ("/", "/import/"):
        response = client.get(url)
        assert response.status_code == 200
        assert "You are not in a project yet" in response.content.decode()
    assert 'class="project-menu"' not in client.get("/").content.decode()


def test_a_superuser_may_switch_to_every_project(team: Team) -> None:
    page = team.client(team.superuser).get("/").content.decode()
    assert 'value="alpha"' in page and 'value="beta"' in page and 'value="default"' in page
    response = team.client(team.superuser).post("/projects/switch/", {"project": "beta"})
    assert response.status_code == 303


# --- the header's links follow the policy --------------------------------------------------


def test_the_header_links_to_moderation_and_admin_by_role_not_by_staff_status(team: Team) -> None:
    User.objects.filter(pk__in=[team.editor.pk, team.owner.pk]).update(is_staff=True)
    editor = team.client(team.editor).get("/").content.decode()  # staff, no moderator
    assert 'href="/moderation/"' not in editor and 'href="/admin/"' not in editor
    assert 'href="/p/alpha/audit/"' not in editor
    moderator = team.client(team.moderator).get("/").content.decode()  # moderator, not staff
    assert 'href="/moderation/"' in moderator and 'href="/admin/"' not in moderator
    assert 'href="/p/alpha/audit/"' in moderator
    owner = team.client(team.owner).get("/").content.decode()  # admin and staff
    assert 'href="/moderation/"' in owner and 'href="/admin/"' in owner
    assert 'href="/p/alpha/"' in owner


# --- the project page ----------------------------------------------------------------------


def test_members_see_the_project_its_members_and_roles_but_only_admins_its_tokens(
    team: Team,
) -> None:
    team.token(team.alpha, "ingest")
    viewer = team.client(team.viewer).get("/p/alpha/").content.decode()
    for name, role in (("owner", "admin"), ("moderator", "moderator"), ("editor", "editor")):
        assert f"<td>{name}</td>" in viewer and f"<td>{role}</td>" in viewer
    assert "API tokens" not in viewer and "Add member" not in viewer and "tr_" not in viewer
    assert "Save retention" not in viewer and "kept until someone deletes them" in viewer
    owner = team.client(team.owner).get("/p/alpha/").content.decode()
    assert "API tokens" in owner and "Add member" in owner and "Save retention" in owner
    assert "outsider" not in owner  # beta's admin is no member of alpha


def test_an_admin_adds_changes_and_removes_members_each_step_audited(team: Team) -> None:
    User.objects.create_user("newcomer")
    owner = team.client(team.owner)
    response = owner.post("/p/alpha/members/", {"username": "newcomer", "role": "editor"})
    assert response.status_code == 303
    newcomer = User.objects.get(username="newcomer")
    assert Membership.objects.get(project=team.alpha, user=newcomer).role == "editor"
    assert "newcomer is now editor of Alpha." in owner.get("/p/alpha/").content.decode()
    owner.post(f"/p/alpha/members/{newcomer.pk}/role/", {"role": "moderator"})
    assert Membership.objects.get(project=team.alpha, user=newcomer).role == "moderator"
    owner.post(f"/p/alpha/members/{newcomer.pk}/remove/")
    assert not Membership.objects.filter(project=team.alpha, user=newcomer).exists()
    actions = list(
        AuditRecord.objects.filter(project=team.alpha)
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["add_member", "change_role", "remove_member"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"username": "nobody", "role": "viewer"}, "There is no active account called “nobody”"),
        ({"username": "stranger", "role": "owner"}, "Role:"),
        ({"username": "", "role": "viewer"}, "Username:"),
    ],
)
def test_adding_a_member_says_what_is_wrong(team: Team, data: dict[str, str], message: str) -> None:
    response = team.client(team.owner).post("/p/alpha/members/", data)
    assert response.status_code == 422 and message in response.content.decode()
    assert not Membership.objects.filter(user=team.stranger).exists()


def test_the_last_admin_cannot_step_down_and_is_told_why(team: Team) -> None:
    owner = team.client(team.owner)
    for url, data in (
        (f"/p/alpha/members/{team.owner.pk}/role/", {"role": "viewer"}),
        (f"/p/alpha/members/{team.owner.pk}/remove/", {}),
    ):
        response = owner.post(url, data)
        assert response.status_code == 409
        assert "keeps at least one admin" in response.content.decode()
    assert Membership.objects.get(project=team.alpha, user=team.owner).role == "admin"


def test_changing_or_removing_someone_who_is_no_member_is_a_404(team: Team) -> None:
    owner = team.client(team.owner)
    assert (
        owner.post(f"/p/alpha/members/{team.outsider.pk}/role/", {"role": "viewer"}).status_code
        == 404
    )
    assert owner.post(f"/p/alpha/members/{team.outsider.pk}/remove/").status_code == 404
    assert Membership.objects.get(user=team.outsider).role == "admin"


def test_a_new_token_is_shown_once_and_works_then_it_can_be_revoked(team: Team) -> None:
    owner = team.client(team.owner)
    response = owner.post(
        "/p/alpha/tokens/", {"name": "support agent", "scopes": ["ingest", "read"]}
    )
    assert response.status_code == 201 and response["Cache-Control"] == "no-store"
    html = response.content.decode()
    raw = html.split('<code id="new-token-value">')[1].split("</code>")[0]
    assert raw.startswith("tr_") and "never shown again" in html and f'data-copy="{raw}"' in html
    token = ApiToken.objects.get(name="support agent")
    assert token.project == team.alpha and token.scopes == ["ingest", "read"]
    assert token.token_hash == ApiToken.hash_token(raw)
    listed = owner.get("/p/alpha/").content.decode()
    assert raw not in listed and token.prefix in listed
    api = owner.__class__().get("/api/v1/threads", headers={"Authorization": f"Bearer {raw}"})
    assert api.status_code == 200
    assert owner.post(f"/p/alpha/tokens/{token.pk}/revoke/").status_code == 303
    token.refresh_from_db()
    assert token.revoked_at is not None
    api = owner.__class__().get("/api/v1/threads", headers={"Authorization": f"Bearer {raw}"})
    assert api.status_code == 401
    assert [r.action for r in AuditRecord.objects.filter(project=team.alpha).order_by("id")] == [
        "create_token",
        "revoke_token",
    ]


def test_a_token_needs_a_name_and_a_scope_and_another_projects_token_is_a_404(
    team: Team,
) -> None:
    owner = team.client(team.owner)
    response = owner.post("/p/alpha/tokens/", {"name": "no scope"})
    assert response.status_code == 422 and "Choose at least one scope" in response.content.decode()
    response = owner.post("/p/alpha/tokens/", {"name": "", "scopes": ["read"]})
    assert response.status_code == 422
    assert not ApiToken.objects.exists()
    team.token(team.beta, "read")
    beta_token = ApiToken.objects.get(project=team.beta)
    assert owner.post(f"/p/alpha/tokens/{beta_token.pk}/revoke/").status_code == 404
    assert owner.post(f"/p/beta/tokens/{beta_token.pk}/revoke/").status_code == 404
    beta_token.refresh_from_db()
    assert beta_token.revoked_at is None


def test_retention_is_set_in_days_or_turned_off(team: Team) -> None:
    owner = team.client(team.owner)
    assert owner.post("/p/alpha/retention/", {"days": "30"}).status_code == 303
    team.alpha.refresh_from_db()
    assert team.alpha.retention_days == 30
    page = team.client(team.viewer).get("/p/alpha/").content.decode()
    assert "no activity for <strong>30 days</strong> are deleted" in page
    for bad in ("0", "-3", "forever", "36501"):
        assert owner.post("/p/alpha/retention/", {"days": bad}).status_code == 422, bad
    team.alpha.refresh_from_db()
    assert team.alpha.retention_days == 30
    assert owner.post("/p/alpha/retention/", {"days": ""}).status_code == 303
    team.alpha.refresh_from_db()
    assert team.alpha.retention_days is None
    record = AuditRecord.objects.filter(action="set_retention").order_by("-id").first()
    assert record is not None and record.project == team.alpha
    assert record.details == {"retentionDays": None}


# --- imports go into the current project ---------------------------------------------------


def _upload() -> SimpleUploadedFile:
    raw = (FIXTURES / "anthropic_messages.json").read_bytes()
    return SimpleUploadedFile("a.json", raw, content_type="application/json")


def test_an_import_goes_into_the_current_project_and_needs_an_editor_there(team: Team) -> None:
    set_member(project=team.beta, user=team.editor, role="viewer")
    client = team.client(team.editor)
    page = client.get("/import/").content.decode()
    assert 'into <a href="/p/alpha/">Alpha</a>' in page and 'name="file"' in page
    assert client.post("/import/", {"file": _upload()}).status_code == 201
    assert Thread.objects.get().project == team.alpha
    client.post("/projects/switch/", {"project": "beta"})
    page = client.get("/import/").content.decode()
    assert 'name="file"' not in page and "importing needs the editor role" in page
    refused = client.post("/import/", {"file": _upload()}, headers={"HX-Request": "true"})
    assert refused.status_code == 403 and b"editor role" in refused.content
    assert Thread.objects.count() == 1


def test_import_jobs_are_the_users_own_in_projects_they_still_read(team: Team) -> None:
    job = ImportJob.objects.create(
        filename="mine.json", size=1, user=team.editor, project=team.alpha
    )
    client = team.client(team.editor)
    assert client.get(f"/import/{job.id}/").status_code == 200
    assert team.client(team.owner).get(f"/import/{job.id}/").status_code == 404
    assert team.client(team.outsider).get(f"/import/{job.id}/").status_code == 404
    Membership.objects.filter(project=team.alpha, user=team.editor).delete()
    assert client.get(f"/import/{job.id}/").status_code == 404

"""API tokens in the admin: a project's admins create them for that project (shown once,
audited), see and revoke only theirs; a stored token never changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import Records
from tests.base import Team, make_user
from transcripts.models import ApiToken, AuditRecord, Project

pytestmark = pytest.mark.django_db
ADD = "admin:transcripts_apitoken_add"


def _create(client: Client, project: Project, *scopes: str, **extra: Any) -> Any:
    data = {"name": "new agent", "project": project.pk, "scopes": list(scopes), **extra}
    return client.post(reverse(ADD), {**data, "_save": "Save"})


def test_a_project_admin_creates_a_token_of_their_project_shown_once_and_audited(
    staff: Team,
) -> None:
    response = _create(
        staff.client(staff.owner), staff.alpha, "ingest", "read", user=staff.editor.pk
    )
    assert response.status_code == 302
    token = ApiToken.objects.get(name="new agent")
    assert (token.project, token.scopes, token.user) == (
        staff.alpha,
        ["ingest", "read"],
        staff.editor,
    )
    [shown] = [str(m) for m in get_messages(response.wsgi_request) if "new token is" in str(m)]
    raw = shown.split("The new token is ")[1].split(" ")[0]
    assert ApiToken.hash_token(raw) == token.token_hash
    record = AuditRecord.objects.get(action="create_token")
    assert (record.actor, record.project) == (staff.owner, staff.alpha)
    assert record.details == {"name": "new agent", "scopes": ["ingest", "read"]}


def test_the_add_form_offers_only_administered_projects_and_their_members(
    staff: Team, alpha: Records, beta: Records
) -> None:
    make_user("nobody-here")
    form = staff.client(staff.owner).get(reverse(ADD)).context["adminform"].form
    assert list(form.fields["project"].queryset) == [staff.alpha]
    owners = {user.username for user in form.fields["user"].queryset}
    assert owners == {"owner", "moderator", "editor", "viewer", "alpha-reader"}
    assert set(form.fields["scopes"].initial) == {"ingest", "read"}


def test_a_token_of_another_project_or_for_a_non_member_is_refused(staff: Team) -> None:
    client = staff.client(staff.owner)
    assert _create(client, staff.beta, "read").status_code == 200
    outsider_owned = _create(client, staff.alpha, "read", user=staff.outsider.pk)
    assert outsider_owned.status_code == 200
    superuser = staff.client(staff.superuser)
    not_a_member = _create(superuser, staff.beta, "read", user=staff.viewer.pk)
    assert b"is not a member of Beta" in not_a_member.content
    assert _create(client, staff.alpha).status_code == 200  # no scope
    assert not ApiToken.objects.filter(name="new agent").exists()
    assert not AuditRecord.objects.exists()


@pytest.mark.parametrize("who", ["moderator", "editor", "viewer", "stranger"])
def test_members_below_admin_cannot_create_tokens(staff: Team, who: str) -> None:
    assert _create(staff.client(getattr(staff, who)), staff.alpha, "read").status_code == 403
    assert not ApiToken.objects.filter(name="new agent").exists()


def test_revoking_is_audited_and_the_token_stops_working(staff: Team, alpha: Records) -> None:
    response = staff.client(staff.owner).post(
        reverse("admin:transcripts_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [alpha.apitoken.pk]},
    )
    assert response.status_code == 302
    alpha.apitoken.refresh_from_db()
    assert alpha.apitoken.revoked_at is not None
    record = AuditRecord.objects.get(action="revoke_token")
    assert (record.actor, record.project, record.target_id) == (
        staff.owner,
        staff.alpha,
        str(alpha.apitoken.pk),
    )


def test_a_stored_token_cannot_be_changed_or_deleted(staff: Team, alpha: Records) -> None:
    token = alpha.apitoken
    before = ApiToken.objects.filter(pk=token.pk).values().get()
    url = reverse("admin:transcripts_apitoken_change", args=[token.pk])
    for who in (staff.owner, staff.superuser):
        client = staff.client(who)
        page = client.get(url).content.decode()
        assert 'name="name"' not in page and 'name="scopes"' not in page
        assert 'name="_save"' not in page
        changed = {"name": "renamed", "scopes": ["admin"], "_save": "Save"}
        assert client.post(url, changed).status_code == 403
        delete = reverse("admin:transcripts_apitoken_delete", args=[token.pk])
        assert client.post(delete, {"post": "yes"}).status_code == 403
    assert ApiToken.objects.filter(pk=token.pk).values().get() == before

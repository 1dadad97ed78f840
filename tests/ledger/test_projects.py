"""Projects, members, tokens and the role policy, through the services and the commands."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from tests.api.conftest import ApiClient
from tests.base import Team, make_user
from tests.factories import make_thread
from transcripts import ledger
from transcripts.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from transcripts.ledger import moderation
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import (
    choose_project,
    create_project,
    remove_member,
    set_member,
    set_retention,
)
from transcripts.ledger.tokens import issue_token, revoke_token
from transcripts.models import ApiToken, AuditRecord, Membership, Profile, Project
from transcripts.permissions import (
    Role,
    project_access,
    project_ids,
    readable_threads,
    thread_access,
)

pytestmark = pytest.mark.django_db


def test_each_role_includes_the_ones_below_it(team: Team) -> None:
    rights = {
        user.username: project_access(user, team.alpha)
        for user in (team.viewer, team.editor, team.moderator, team.owner, team.outsider)
    }
    table = {
        name: (a.can_read, a.can_edit, a.can_moderate, a.can_administer, a.sees_hidden)
        for name, a in rights.items()
    }
    assert table == {
        "viewer": (True, False, False, False, False),
        "editor": (True, True, False, False, False),
        "moderator": (True, True, True, False, True),
        "owner": (True, True, True, True, True),
        "outsider": (False, False, False, False, False),
    }
    assert project_access(team.superuser, team.beta).can_administer
    assert project_ids(team.superuser) is None
    assert project_ids(team.outsider) == [team.beta.pk]
    assert project_ids(team.viewer, at_least=Role.MODERATOR) == []


def test_staff_status_alone_reads_nothing(team: Team) -> None:
    team.stranger.is_staff = True
    team.stranger.save()
    make_thread("alpha's", project=team.alpha)
    assert list(readable_threads(team.stranger)) == []


def test_hidden_threads_are_for_moderators_of_their_project(team: Team) -> None:
    hidden = make_thread("hidden", project=team.alpha)
    moderation.hide_thread(user=team.moderator, thread=hidden, reason="spam")
    shown = make_thread("shown", project=team.alpha)
    assert set(readable_threads(team.viewer)) == {shown}
    assert set(readable_threads(team.moderator)) == {shown, hidden}
    assert not thread_access(team.editor, hidden).can_read
    assert thread_access(team.owner, hidden).can_moderate


def test_services_refuse_roles_below_what_they_need(team: Team) -> None:
    thread = make_thread("alpha", project=team.alpha)
    with pytest.raises(PermissionDenied):
        moderation.hide_thread(user=team.editor, thread=thread, reason="x")
    with pytest.raises(PermissionDenied):
        moderation.lock_thread(user=team.outsider, thread=thread, reason="x")
    with pytest.raises(PermissionDenied):
        moderation.delete_thread(user=team.moderator, thread=thread, reason="x")
    moderation.lock_thread(user=team.moderator, thread=thread, reason="legal hold")
    moderation.delete_thread(user=team.owner, thread=thread, reason="asked to")
    assert list(AuditRecord.objects.values_list("action", "project")) == [
        ("delete", team.alpha.pk),
        ("lock", team.alpha.pk),
    ]


def test_a_thread_id_of_another_project_is_refused_without_saying_where(team: Team) -> None:
    thread = make_thread("alpha's", project=team.alpha)
    with pytest.raises(Conflict) as refused:
        ledger.create_thread(project=team.beta, title="mine", thread_id=thread.id)
    assert "alpha" not in refused.value.message and thread.title not in refused.value.message
    again, created = ledger.create_thread(project=team.alpha, title="x", thread_id=thread.id)
    assert again == thread and not created


def test_projects_have_unique_slugs(team: Team) -> None:
    with pytest.raises(Conflict):
        create_project(slug="alpha")
    with pytest.raises(InvalidInput):
        create_project(slug="no spaces here")
    assert create_project(slug="gamma", name="Gamma", retention_days=90).retention_days == 90


def test_members_are_managed_by_project_admins_only_and_audited(team: Team) -> None:
    newcomer = make_user("newcomer")
    with pytest.raises(PermissionDenied):
        set_member(project=team.alpha, user=newcomer, role="viewer", actor=team.moderator)
    with pytest.raises(PermissionDenied):
        set_member(project=team.alpha, user=newcomer, role="viewer", actor=team.outsider)
    set_member(project=team.alpha, user=newcomer, role="viewer", actor=team.owner)
    assert project_access(newcomer, team.alpha).role == Role.VIEWER
    set_member(project=team.alpha, user=newcomer, role="editor", actor=team.owner)
    assert project_access(newcomer, team.alpha).role == Role.EDITOR
    with pytest.raises(InvalidInput):
        set_member(project=team.alpha, user=newcomer, role="overlord", actor=team.owner)
    remove_member(project=team.alpha, user=newcomer, actor=team.owner)
    assert not Membership.objects.filter(user=newcomer).exists()
    assert project_access(newcomer, team.alpha).role is None
    with pytest.raises(NotFound):
        remove_member(project=team.alpha, user=newcomer, actor=team.owner)
    actions = AuditRecord.objects.filter(project=team.alpha).values_list("action", flat=True)
    assert sorted(actions) == ["add_member", "change_role", "remove_member"]


def test_a_project_keeps_at_least_one_admin(team: Team) -> None:
    for step in (
        lambda: set_member(project=team.alpha, user=team.owner, role="viewer", actor=team.owner),
        lambda: remove_member(project=team.alpha, user=team.owner, actor=team.owner),
        lambda: set_member(project=team.alpha, user=team.owner, role="editor"),
    ):
        with pytest.raises(Conflict, match="at least one admin"):
            step()
        assert Membership.objects.get(project=team.alpha, user=team.owner).role == "admin"
    assert not AuditRecord.objects.filter(project=team.alpha).exists()
    # With a second admin, either may step down; then the other is the last one.
    set_member(project=team.alpha, user=team.moderator, role="admin", actor=team.owner)
    set_member(project=team.alpha, user=team.owner, role="viewer", actor=team.owner)
    assert project_access(team.owner, team.alpha).role == Role.VIEWER
    with pytest.raises(Conflict):
        remove_member(project=team.alpha, user=team.moderator, actor=team.moderator)
    # Other projects' admins do not count.
    with pytest.raises(Conflict):
        remove_member(project=team.beta, user=team.outsider, actor=team.outsider)


def test_retention_is_set_by_admins_within_bounds(team: Team) -> None:
    with pytest.raises(PermissionDenied):
        set_retention(project=team.alpha, days=30, actor=team.moderator)
    for bad in (0, -1, 100_000):
        with pytest.raises(InvalidInput):
            set_retention(project=team.alpha, days=bad, actor=team.owner)
    set_retention(project=team.alpha, days=30, actor=team.owner)
    set_retention(project=team.alpha, days=None, actor=team.owner)
    team.alpha.refresh_from_db()
    assert team.alpha.retention_days is None


def test_the_chosen_project_is_remembered_only_where_the_user_reads(team: Team) -> None:
    choose_project(user=team.viewer, project=team.alpha)
    assert Profile.objects.get(user=team.viewer).current_project == team.alpha
    with pytest.raises(PermissionDenied):
        choose_project(user=team.viewer, project=team.beta)


def test_tokens_are_issued_and_revoked_by_project_admins(team: Team) -> None:
    with pytest.raises(PermissionDenied):
        issue_token(name="bot", scopes=["ingest"], project=team.alpha, actor=team.moderator)
    token, raw = issue_token(name="bot", scopes=["ingest"], project=team.alpha, actor=team.owner)
    assert raw.startswith("tr_") and token.token_hash != raw and token.project == team.alpha
    with pytest.raises(InvalidInput):
        issue_token(name="bot", scopes=["root"], project=team.alpha)
    with pytest.raises(PermissionDenied):
        revoke_token(token=token, actor=team.outsider)
    revoke_token(token=token, actor=team.owner)
    revoke_token(token=token, actor=team.owner)
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    actions = list(AuditRecord.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["create_token", "revoke_token"]


def test_the_commands_create_a_project_its_members_and_a_token(team: Team, capsys) -> None:
    call_command("create_project", "support", "--name", "Support bot")
    make_user("dana")
    call_command("add_member", "support", "dana", "--role", "moderator")
    call_command("create_api_token", "agent", "--project", "support", "--scopes", "ingest,read")
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == "Created project support (Support bot)."
    assert out[1] == "dana is moderator of support."
    raw = out[-1]
    support = Project.objects.get(slug="support")
    assert ApiToken.objects.get(prefix=raw[:10]).project == support

    api = ApiClient(raw)
    created = api.post("/threads", {"title": "from the agent"})
    assert created.status_code == 201
    assert support.threads.get().title == "from the agent"
    alpha_thread = make_thread("alpha's", project=team.alpha)
    assert api.get(f"/threads/{alpha_thread.id}").status_code == 404

    with pytest.raises(CommandError):
        call_command("add_member", "support", "nobody", "--role", "viewer")
    with pytest.raises(CommandError):
        call_command("create_api_token", "x", "--project", "missing")


def test_a_token_without_project_flag_belongs_to_default(db: None, capsys) -> None:
    call_command("create_api_token", "legacy")
    raw = capsys.readouterr().out.strip().splitlines()[-1]
    assert ApiToken.objects.get(prefix=raw[:10]).project == default_project()

"""Projects and memberships in the admin: superusers create and rename projects, a project's
admins set its retention and manage its members, each change through `ledger.projects`,
audited; nobody reaches another project's."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import Records
from tests.base import Team, make_user
from tests.factories import make_thread
from transcripts.admin.projects import ProjectAdmin
from transcripts.models import AuditRecord, Membership, Project

pytestmark = pytest.mark.django_db


def _post(client: Client, url: str, data: dict[str, Any]) -> Any:
    return client.post(url, {**data, "_save": "Save"})


def _add_project(client: Client, slug: str = "gamma", **extra: Any) -> Any:
    data = {"slug": slug, "name": slug.title(), "retention_days": "", **extra}
    return _post(client, reverse("admin:transcripts_project_add"), data)


def test_a_superuser_creates_a_project_audited(staff: Team) -> None:
    response = _add_project(staff.client(staff.superuser), retention_days="30")
    assert response.status_code == 302
    gamma = Project.objects.get(slug="gamma")
    assert (gamma.name, gamma.retention_days) == ("Gamma", 30)
    record = AuditRecord.objects.get(action="create_project")
    assert record.actor == staff.superuser and record.project == gamma


@pytest.mark.parametrize("who", ["owner", "moderator", "viewer", "outsider", "stranger"])
def test_nobody_else_creates_projects(staff: Team, who: str) -> None:
    response = _add_project(staff.client(getattr(staff, who)))
    assert response.status_code == 403
    assert not Project.objects.filter(slug="gamma").exists()


def test_the_add_form_refuses_a_taken_slug_and_a_retention_out_of_range(staff: Team) -> None:
    client = staff.client(staff.superuser)
    assert _add_project(client, "alpha").status_code == 200
    assert _add_project(client, retention_days="0").status_code == 200
    assert _add_project(client, retention_days="36501").status_code == 200
    assert not Project.objects.filter(slug="gamma").exists()
    assert not AuditRecord.objects.exists()


def test_a_superuser_renames_a_project_and_sets_its_retention_the_slug_stays(
    staff: Team,
) -> None:
    url = reverse("admin:transcripts_project_change", args=[staff.beta.pk])
    data = {"slug": "renamed", "name": "Beta team", "retention_days": "90"}
    assert _post(staff.client(staff.superuser), url, data).status_code == 302
    beta = Project.objects.get(pk=staff.beta.pk)
    assert (beta.slug, beta.name, beta.retention_days) == ("beta", "Beta team", 90)
    actions = set(AuditRecord.objects.filter(project=beta).values_list("action", flat=True))
    assert actions == {"rename_project", "set_retention"}


def test_a_project_admin_sets_retention_of_their_project_but_cannot_rename_it(
    staff: Team,
) -> None:
    url = reverse("admin:transcripts_project_change", args=[staff.alpha.pk])
    page = staff.client(staff.owner).get(url).content.decode()
    assert 'name="retention_days"' in page and 'name="name"' not in page
    data = {"name": "Taken over", "retention_days": "7"}
    assert _post(staff.client(staff.owner), url, data).status_code == 302
    alpha = Project.objects.get(pk=staff.alpha.pk)
    assert (alpha.name, alpha.retention_days) == ("Alpha", 7)
    record = AuditRecord.objects.get(action="set_retention")
    assert record.actor == staff.owner and record.details == {"retentionDays": 7}
    _post(staff.client(staff.owner), url, {"retention_days": ""})
    assert Project.objects.get(pk=staff.alpha.pk).retention_days is None


def test_another_projects_admin_cannot_change_it(staff: Team) -> None:
    url = reverse("admin:transcripts_project_change", args=[staff.alpha.pk])
    assert _post(staff.client(staff.outsider), url, {"retention_days": "1"}).status_code == 404
    assert _post(staff.client(staff.moderator), url, {"retention_days": "1"}).status_code == 403
    assert Project.objects.get(pk=staff.alpha.pk).retention_days is None
    assert not AuditRecord.objects.exists()


def test_projects_are_not_deleted_from_the_admin(staff: Team) -> None:
    url = reverse("admin:transcripts_project_delete", args=[staff.beta.pk])
    assert staff.client(staff.superuser).post(url, {"post": "yes"}).status_code == 403
    assert Project.objects.filter(pk=staff.beta.pk).exists()


def test_the_list_counts_threads_up_to_a_cap(staff: Team, monkeypatch: Any) -> None:
    for n in range(3):
        make_thread(f"t{n}", project=staff.alpha)
    client = staff.client(staff.superuser)
    url = reverse("admin:transcripts_project_changelist")

    def threads_cell() -> str:
        page = client.get(url).content.decode()
        row = page[page.index(">alpha<") :]
        return row[row.index('class="field-thread_count"') :].split(">", 1)[1].split("<", 1)[0]

    assert threads_cell() == "3"
    monkeypatch.setattr(ProjectAdmin, "thread_count_cap", 2)
    assert threads_cell() == "2+"


# --- memberships -----------------------------------------------------------------------------


def _add_member(client: Client, project: Project, username: str, role: str) -> Any:
    data = {"project": project.pk, "username": username, "role": role}
    return _post(client, reverse("admin:transcripts_membership_add"), data)


def test_a_project_admin_adds_a_member_by_username_audited(staff: Team) -> None:
    make_user("newcomer")
    response = _add_member(staff.client(staff.owner), staff.alpha, "newcomer", "editor")
    assert response.status_code == 302
    membership = Membership.objects.get(user__username="newcomer")
    assert (membership.project, membership.role) == (staff.alpha, "editor")
    record = AuditRecord.objects.get(action="add_member")
    assert (record.actor, record.project) == (staff.owner, staff.alpha)
    assert record.details == {"member": "newcomer", "role": "editor"}


def test_the_add_form_offers_only_the_projects_the_user_administers(staff: Team) -> None:
    make_user("newcomer")
    page = staff.client(staff.owner).get(reverse("admin:transcripts_membership_add"))
    offered = {str(project) for project in page.context["adminform"].form["project"].field.queryset}
    assert offered == {"Alpha"}
    response = _add_member(staff.client(staff.owner), staff.beta, "newcomer", "admin")
    assert response.status_code == 200  # the form again: not a valid choice
    assert not Membership.objects.filter(user__username="newcomer").exists()


def test_the_add_form_refuses_unknown_accounts_and_existing_members(staff: Team) -> None:
    client = staff.client(staff.owner)
    assert _add_member(client, staff.alpha, "nobody", "viewer").status_code == 200
    taken = _add_member(client, staff.alpha, "viewer", "admin")
    assert taken.status_code == 200 and b"a member of Alpha already" in taken.content
    assert Membership.objects.get(project=staff.alpha, user=staff.viewer).role == "viewer"
    assert not AuditRecord.objects.exists()


def test_a_project_admin_changes_a_role_audited_and_only_the_role(staff: Team) -> None:
    membership = Membership.objects.get(project=staff.alpha, user=staff.viewer)
    url = reverse("admin:transcripts_membership_change", args=[membership.pk])
    data = {"role": "moderator", "project": staff.beta.pk, "user": staff.owner.pk}
    assert _post(staff.client(staff.owner), url, data).status_code == 302
    membership.refresh_from_db()
    assert (membership.project, membership.user, membership.role) == (
        staff.alpha,
        staff.viewer,
        "moderator",
    )
    record = AuditRecord.objects.get(action="change_role")
    assert record.details == {"member": "viewer", "role": "moderator"}


def test_a_project_admin_removes_a_member_from_the_delete_page_audited(staff: Team) -> None:
    membership = Membership.objects.get(project=staff.alpha, user=staff.editor)
    url = reverse("admin:transcripts_membership_delete", args=[membership.pk])
    assert staff.client(staff.owner).post(url, {"post": "yes"}).status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()
    record = AuditRecord.objects.get(action="remove_member")
    assert (record.actor, record.details) == (staff.owner, {"member": "editor"})


@pytest.mark.parametrize(("who", "status"), [("outsider", 404), ("moderator", 403)])
def test_others_cannot_change_or_remove_alphas_members(
    staff: Team, alpha: Records, who: str, status: int
) -> None:
    membership = Membership.objects.get(project=staff.alpha, user=staff.viewer)
    client = staff.client(getattr(staff, who))
    change = reverse("admin:transcripts_membership_change", args=[membership.pk])
    delete = reverse("admin:transcripts_membership_delete", args=[membership.pk])
    assert _post(client, change, {"role": "admin"}).status_code == status
    assert client.post(delete, {"post": "yes"}).status_code == status
    assert _add_member(client, staff.alpha, "stranger", "admin").status_code in (200, 403)
    membership.refresh_from_db()
    assert membership.role == "viewer"
    assert not Membership.objects.filter(user=staff.stranger).exists()
    assert not AuditRecord.objects.filter(action__contains="member").exists()

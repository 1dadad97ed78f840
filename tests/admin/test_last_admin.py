"""The admin cannot leave a project without an admin: the change form and the delete page say
why (through `ledger.projects`), and nothing changes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.base import Team
from transcripts.models import AuditRecord, Membership

pytestmark = pytest.mark.django_db


def test_the_last_admin_is_not_demoted_from_the_change_form(staff: Team) -> None:
    membership = Membership.objects.get(project=staff.alpha, user=staff.owner)
    url = reverse("admin:transcripts_membership_change", args=[membership.pk])
    data = {"role": "viewer", "project": staff.alpha.pk, "user": staff.owner.pk, "_save": "Save"}
    response = staff.client(staff.owner).post(url, data)
    assert response.status_code == 200
    assert "keeps at least one admin" in response.content.decode()
    membership.refresh_from_db()
    assert membership.role == "admin"
    assert not AuditRecord.objects.filter(action="change_role").exists()


def test_the_last_admin_is_not_removed_from_the_delete_page(staff: Team) -> None:
    membership = Membership.objects.get(project=staff.alpha, user=staff.owner)
    url = reverse("admin:transcripts_membership_delete", args=[membership.pk])
    response = staff.client(staff.owner).post(url, {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert "keeps at least one admin" in response.content.decode()
    assert Membership.objects.filter(pk=membership.pk, role="admin").exists()
    assert not AuditRecord.objects.filter(action="remove_member").exists()

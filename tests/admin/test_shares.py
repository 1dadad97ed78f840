"""Share links in the admin: a project's moderators list them (filtered by project and
status) and revoke them by an audited action; other projects' links are not there."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.base import Team
from tests.ledger.test_shares import branched_thread
from transcripts import ledger
from transcripts.models import AuditRecord, ShareLink

pytestmark = pytest.mark.django_db
CHANGELIST = "admin:transcripts_sharelink_changelist"


@pytest.fixture
def links(staff: Team) -> dict[str, ShareLink]:
    """A live link in alpha, an expired one in alpha, a live one in beta."""
    alpha = branched_thread(staff.alpha, "Alpha shared")
    beta = branched_thread(staff.beta, "Beta shared")
    live, _ = ledger.create_share(thread=alpha.thread, user=staff.editor)
    expired, _ = ledger.create_share(
        thread=alpha.thread, user=staff.editor, expires_at=timezone.now() + timedelta(hours=1)
    )
    ShareLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    other, _ = ledger.create_share(thread=beta.thread, user=staff.outsider)
    return {"live": live, "expired": expired, "beta": other}


def _listed(client: Client, **params: str) -> set[str]:
    response = client.get(reverse(CHANGELIST), params)
    assert response.status_code == 200
    return {share.id for share in response.context["cl"].result_list}


def test_a_moderator_lists_only_the_links_of_their_project(
    staff: Team, links: dict[str, ShareLink]
) -> None:
    client = staff.client(staff.moderator)

    assert _listed(client) == {links["live"].id, links["expired"].id}
    assert _listed(client, status="active") == {links["live"].id}
    assert _listed(client, status="expired") == {links["expired"].id}
    page = reverse("admin:transcripts_sharelink_change", args=[links["beta"].id])
    assert client.get(page).status_code == 404
    own = reverse("admin:transcripts_sharelink_change", args=[links["live"].id])
    assert client.get(own).status_code == 200
    assert links["live"].secret_hash not in client.get(own).content.decode()


def test_a_superuser_filters_by_project(staff: Team, links: dict[str, ShareLink]) -> None:
    client = staff.client(staff.superuser)

    assert _listed(client, project=str(staff.beta.pk)) == {links["beta"].id}


@pytest.mark.parametrize("who", ["editor", "viewer"])
def test_members_below_moderator_do_not_see_the_links(
    staff: Team, links: dict[str, ShareLink], who: str
) -> None:
    response = staff.client(getattr(staff, who)).get(reverse(CHANGELIST))

    assert response.status_code == 403


def test_revoking_from_the_admin_is_audited_and_leaves_other_projects_alone(
    staff: Team, links: dict[str, ShareLink]
) -> None:
    selected = [links["live"].pk, links["beta"].pk]

    response = staff.client(staff.moderator).post(
        reverse(CHANGELIST), {"action": "revoke", "_selected_action": selected}
    )

    assert response.status_code == 302
    assert ShareLink.objects.get(pk=links["live"].pk).revoked_by == staff.moderator
    assert ShareLink.objects.get(pk=links["beta"].pk).revoked_at is None
    record = AuditRecord.objects.get(action="revoke_share")
    assert (record.actor, record.target_id, record.details["via"]) == (
        staff.moderator,
        links["live"].id,
        "admin",
    )


def test_nobody_adds_changes_or_deletes_links_here(
    staff: Team, links: dict[str, ShareLink]
) -> None:
    client = staff.client(staff.superuser)

    assert client.get(reverse("admin:transcripts_sharelink_add")).status_code == 403
    delete = reverse("admin:transcripts_sharelink_delete", args=[links["live"].pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert ShareLink.objects.count() == 3

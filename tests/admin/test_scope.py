"""Who sees what in the admin: every list, page and search shows only the records of the
projects where the user holds the role (moderator for moderation, admin for tokens, projects and
members); another project's record is a 404, a member without the role gets 403."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.admin.conftest import Records
from tests.base import Team
from transcripts.ledger import moderation

pytestmark = pytest.mark.django_db

MODERATION_MODELS = ("thread", "run", "message", "event", "report", "auditrecord")
ADMIN_MODELS = ("apitoken", "membership", "project")
# The lookup from each model to its project's slug.
PROJECT_OF = {
    "thread": "project__slug",
    "run": "thread__project__slug",
    "message": "thread__project__slug",
    "event": "thread__project__slug",
    "report": "thread__project__slug",
    "auditrecord": "project__slug",
    "apitoken": "project__slug",
    "membership": "project__slug",
    "project": "slug",
}
# Whose admin shows which projects; everyone else here is refused (403).
MODERATES = {"owner": {"alpha"}, "moderator": {"alpha"}, "outsider": {"beta"}}
ADMINISTERS = {"owner": {"alpha"}, "outsider": {"beta"}}
EVERYONE = ("owner", "moderator", "editor", "viewer", "outsider", "stranger", "superuser")


def _sees(who: str, model: str) -> set[str] | None:
    """The projects whose records of model who sees; None: refused."""
    if who == "superuser":
        return {"alpha", "beta"}
    return (MODERATES if model in MODERATION_MODELS else ADMINISTERS).get(who)


def _shown(client: Client, model: str, **params: Any) -> set[str]:
    """The projects of the rows a changelist shows."""
    response = client.get(reverse(f"admin:transcripts_{model}_changelist"), params)
    assert response.status_code == 200, (model, response.status_code)
    pks = [obj.pk for obj in response.context["cl"].result_list]
    rows = apps.get_model("transcripts", model).objects.filter(pk__in=pks)
    return set(rows.values_list(PROJECT_OF[model], flat=True))


@pytest.mark.parametrize("who", EVERYONE)
def test_a_list_shows_only_the_projects_where_the_user_holds_the_role(
    staff: Team, alpha: Records, beta: Records, who: str
) -> None:
    client = staff.client(getattr(staff, who))
    for model in MODERATION_MODELS + ADMIN_MODELS:
        sees = _sees(who, model)
        if sees is None:
            response = client.get(reverse(f"admin:transcripts_{model}_changelist"))
            assert response.status_code == 403, model
        elif who == "superuser":
            assert sees <= _shown(client, model), model  # and the default project's records
        else:
            assert _shown(client, model) == sees, model


@pytest.mark.parametrize("who", EVERYONE)
def test_a_change_page_is_404_outside_the_users_projects_and_403_without_the_role(
    staff: Team, alpha: Records, beta: Records, who: str
) -> None:
    client = staff.client(getattr(staff, who))
    for model in MODERATION_MODELS + ADMIN_MODELS:
        sees = _sees(who, model)
        for records in (alpha, beta):
            pk = records.pk(model)
            expected = 403 if sees is None else 200 if records.project.slug in sees else 404
            for page in ("change", "history"):
                url = reverse(f"admin:transcripts_{model}_{page}", args=[pk])
                assert client.get(url).status_code == expected, url


@pytest.mark.parametrize("model", MODERATION_MODELS)
def test_a_record_of_another_project_looks_like_one_that_does_not_exist(
    staff: Team, alpha: Records, model: str
) -> None:
    client = staff.client(staff.outsider)
    other_id = alpha.pk(model)
    missing_id = "01ARZ3NDEKTSV4RRFFQ69G5FAV" if model in ("thread", "run", "message") else 999999
    other = client.get(reverse(f"admin:transcripts_{model}_change", args=[other_id]))
    missing = client.get(reverse(f"admin:transcripts_{model}_change", args=[missing_id]))
    assert other.status_code == missing.status_code == 404
    assert other.content.replace(str(other_id).encode(), b"") == missing.content.replace(
        str(missing_id).encode(), b""
    )


# The record of alpha whose id each list finds when searched for.
SEARCHED_BY = {
    "thread": "thread",
    "run": "run",
    "message": "message",
    "event": "run",
    "report": "message",
    "auditrecord": "thread",
}


@pytest.mark.parametrize("model", MODERATION_MODELS)
def test_searching_for_another_projects_ids_finds_nothing(
    staff: Team, alpha: Records, beta: Records, model: str
) -> None:
    ids = (alpha.thread.pk, alpha.run.pk, alpha.message.pk, alpha.failed_run.pk)
    for term in ids:
        assert _shown(staff.client(staff.outsider), model, q=term) == set(), term
    # The search that finds nothing for the outsider finds alpha's record for its moderator.
    term = getattr(alpha, SEARCHED_BY[model]).pk
    assert _shown(staff.client(staff.moderator), model, q=term) == {"alpha"}


@pytest.mark.parametrize("model", MODERATION_MODELS)
def test_the_project_filter_narrows_a_superusers_list(
    staff: Team, alpha: Records, beta: Records, model: str
) -> None:
    client = staff.client(staff.superuser)
    assert _shown(client, model, project=beta.project.pk) == {"beta"}
    assert _shown(client, model) == {"alpha", "beta"}


def test_staff_status_alone_opens_an_empty_admin(staff: Team, alpha: Records) -> None:
    client = staff.client(staff.stranger)
    index = client.get(reverse("admin:index"))
    assert index.status_code == 200
    assert index.context["app_list"] == []
    assert "moderation-counts" not in index.content.decode()


def test_members_who_are_not_staff_do_not_get_into_the_admin(team: Team) -> None:
    response = team.client(team.owner).get(reverse("admin:transcripts_thread_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize(
    ("who", "models"),
    [
        ("viewer", set()),
        ("editor", set()),
        ("moderator", {*MODERATION_MODELS, "sharelink"}),
        ("owner", {*MODERATION_MODELS, *ADMIN_MODELS, "sharelink"}),
        ("outsider", {*MODERATION_MODELS, *ADMIN_MODELS, "sharelink"}),
    ],
)
def test_the_index_lists_the_models_the_role_opens(staff: Team, who: str, models: set[str]) -> None:
    index = staff.client(getattr(staff, who)).get(reverse("admin:index"))
    listed = {
        model["object_name"].lower() for app in index.context["app_list"] for model in app["models"]
    }
    assert listed == models


def test_the_index_counts_only_what_waits_in_the_users_projects(
    staff: Team, alpha: Records, beta: Records
) -> None:
    moderation.hide_thread(user=staff.superuser, thread=beta.thread)
    moderation.flag_message(user=staff.superuser, message=beta.message, reason="rude")

    def counts(user: User) -> dict[str, int]:
        context = staff.client(user).get(reverse("admin:index")).context
        return {k: context[k] for k in ("open_reports", "flagged_messages", "hidden_threads")}

    assert counts(staff.moderator) == {
        "open_reports": 1,
        "flagged_messages": 0,
        "hidden_threads": 0,
    }
    assert counts(staff.outsider) == {"open_reports": 1, "flagged_messages": 1, "hidden_threads": 1}
    assert counts(staff.superuser) == {
        "open_reports": 2,
        "flagged_messages": 1,
        "hidden_threads": 1,
    }

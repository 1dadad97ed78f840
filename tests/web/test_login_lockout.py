"""Login lockout (django-axes): after 10 failed logins for a username from one address, the web
and the admin login pages answer 429 with the locked page, even to the right password; the
lockout is recorded once in the audit log."""

from __future__ import annotations

from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client

from tests.base import PASSWORD, make_user
from transcripts.models import AuditRecord

pytestmark = pytest.mark.django_db
PAGES = ["/accounts/login/", "/admin/login/"]


def log_in(client: Client, page: str, username: str, password: str) -> Any:
    return client.post(page, {"username": username, "password": password})


@pytest.mark.parametrize("page", PAGES)
def test_ten_failures_lock_the_username_out_for_its_address(page: str) -> None:
    user = make_user("target", is_staff=True)
    client = Client()
    answers = [log_in(client, page, "target", "wrong").status_code for _ in range(9)]
    assert answers == [200] * 9
    locked = log_in(client, page, "target", "wrong")
    assert locked.status_code == 429
    assert b"Login locked" in locked.content
    assert b"0:15:00" in locked.content
    # The right password no longer works, on either page, from this address.
    for other in PAGES:
        again = log_in(client, other, "target", PASSWORD)
        assert again.status_code == 429, other
        assert "_auth_user_id" not in client.session
    # Another address still logs in.
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    assert log_in(elsewhere, page, "target", PASSWORD).status_code == 302
    records = AuditRecord.objects.filter(action="login_locked_out")
    assert [(r.target_type, r.target_id, r.actor_name) for r in records] == [
        ("user", str(user.pk), "127.0.0.1")
    ]
    assert records[0].details["username"] == "target"
    assert records[0].details["path"] == page


def test_a_success_before_the_limit_starts_the_count_again() -> None:
    make_user("careless")
    client = Client()
    for _ in range(9):
        log_in(client, "/accounts/login/", "careless", "wrong")
    assert log_in(client, "/accounts/login/", "careless", PASSWORD).status_code == 302
    assert not AccessAttempt.objects.filter(username="careless").exists()
    client.logout()
    assert log_in(client, "/accounts/login/", "careless", "wrong").status_code == 200
    assert log_in(client, "/accounts/login/", "careless", "wrong").status_code == 200


def test_the_failures_of_other_usernames_lock_nobody_else() -> None:
    make_user("innocent")
    client = Client()
    for index in range(12):
        log_in(client, "/accounts/login/", f"guess-{index}", "wrong")
    assert log_in(client, "/accounts/login/", "innocent", PASSWORD).status_code == 302

"""Members of the default project (where the factories put threads) with each role."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.base import make_user
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member


def _member(username: str, role: str) -> User:
    user = make_user(username, is_staff=role != "viewer")
    set_member(project=default_project(), user=user, role=role)
    return user


@pytest.fixture
def viewer(db: None) -> User:
    return _member("viewer", "viewer")


@pytest.fixture
def moderator(db: None) -> User:
    return _member("moderator", "moderator")


@pytest.fixture
def admin_user(db: None) -> User:
    return _member("boss", "admin")

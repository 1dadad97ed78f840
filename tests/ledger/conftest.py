"""Users in the Viewers, Moderators and Admins groups, for the moderation services' tests."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User


def _member(username: str, group: str | None, *, is_staff: bool = False) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=is_staff)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def viewer(db: None) -> User:
    return _member("viewer", "Viewers")


@pytest.fixture
def moderator(db: None) -> User:
    return _member("moderator", "Moderators", is_staff=True)


@pytest.fixture
def admin_user(db: None) -> User:
    return _member("boss", "Admins", is_staff=True)

"""Users in the Viewers, Moderators and Admins groups, a superuser, and their clients."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client


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


def _logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def superuser(db: None) -> User:
    return User.objects.create_superuser("root", password="pw")


@pytest.fixture
def moderator_client(moderator: User) -> Client:
    return _logged_in(moderator)


@pytest.fixture
def admins_client(admin_user: User) -> Client:
    """A client logged in as a member of the Admins group (not a superuser)."""
    return _logged_in(admin_user)


@pytest.fixture
def superuser_client(superuser: User) -> Client:
    return _logged_in(superuser)

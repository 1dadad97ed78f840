"""Two projects and the people around them: the base of every view and endpoint test.

As healthchecks' `BaseTestCase` holds alice, bob and charlie, a `Team` holds, for project
`alpha`, its owner (admin), a moderator, an editor and a viewer; an outsider who is the admin
of project `beta` (a member elsewhere, never of alpha); a user with no project at all; and a
superuser. Each test asks three questions of every view and endpoint with it: does the
outsider get 404, does a member without the role get 403, and does the right role act.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from django.test import Client

from transcripts.ledger.projects import create_project, set_member
from transcripts.ledger.tokens import issue_token
from transcripts.models import Project

PASSWORD = "pw-for-tests"


@functools.cache
def _password_hash() -> str:
    # Hashing is slow on purpose; one real hash serves every account (and still lets a browser
    # test log in through the form, on a server in another process). Always PBKDF2, the
    # production default: a faster hasher a test configured would not verify in such a server.
    hasher = PBKDF2PasswordHasher()
    return hasher.encode(PASSWORD, hasher.salt())


def make_user(username: str, **extra: Any) -> User:
    """An active account with the test password."""
    user = User(username=username, password=_password_hash(), **extra)
    user.save()
    return user


@dataclass
class Team:
    """Project alpha with a member of every role, project beta with an outsider as its admin."""

    alpha: Project
    beta: Project
    owner: User
    moderator: User
    editor: User
    viewer: User
    outsider: User
    stranger: User
    superuser: User
    _clients: dict[int, Client] = field(default_factory=dict)

    def client(self, user: User) -> Client:
        """A test client logged in as user (one per user)."""
        if user.pk not in self._clients:
            client = Client()
            client.force_login(user)
            self._clients[user.pk] = client
        return self._clients[user.pk]

    def token(self, project: Project, *scopes: str, user: User | None = None) -> str:
        """A new raw API token of project with scopes (default: ingest and read)."""
        chosen: Iterable[str] = scopes or ("ingest", "read")
        return issue_token(name="test", scopes=chosen, project=project, user=user)[1]


def make_team() -> Team:
    """Create the projects, the people and their memberships."""
    alpha = create_project(slug="alpha", name="Alpha")
    beta = create_project(slug="beta", name="Beta")
    people = {
        name: make_user(name)
        for name in ("owner", "moderator", "editor", "viewer", "outsider", "stranger")
    }
    for name, role in (
        ("owner", "admin"),
        ("moderator", "moderator"),
        ("editor", "editor"),
        ("viewer", "viewer"),
    ):
        set_member(project=alpha, user=people[name], role=role)
    set_member(project=beta, user=people["outsider"], role="admin")
    superuser = make_user("root", is_staff=True, is_superuser=True)
    return Team(alpha=alpha, beta=beta, superuser=superuser, **people)

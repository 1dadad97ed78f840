"""Fixtures of the API tests: clients holding tokens of each kind (the live ASGI server,
`live_server_asgi`, comes from tests/conftest.py).

`api`, `reader` and `admin_api` hold tokens of the default project (where the factories put
threads); the tests of who reaches what use the `team` base (projects alpha and beta).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import Project

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


class ApiClient:
    """A Django test client that speaks JSON to /api/v1/ with a bearer token (or none)."""

    def __init__(self, token: str | None = None, client: Client | None = None) -> None:
        self.client = client or Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token is not None else {}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get("/api/v1" + path, params, headers=self.headers)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        content = json.dumps(body) if body is not None else ""
        kwargs.setdefault("content_type", "application/json")
        return self.client.post("/api/v1" + path, content, headers=self.headers, **kwargs)

    def post_raw(self, path: str, content: bytes | str, content_type: str, **extra: Any) -> Any:
        return self.client.post(
            "/api/v1" + path, content, content_type=content_type, headers=self.headers, **extra
        )

    def request(self, method: str, path: str, body: Any = None) -> Any:
        if method == "GET":
            return self.get(path)
        if method in ("PATCH", "DELETE"):
            content = json.dumps(body) if body is not None else ""
            return self.client.generic(
                method, "/api/v1" + path, content, "application/json", headers=self.headers
            )
        return self.post(path, body)


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """The team's seven accounts are created for each test: hash their passwords cheaply."""
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        # Still verifies the shared PBKDF2 hash of tests.base.
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]


@pytest.fixture
def make_token() -> Callable[..., str]:
    """Create a token with the given scopes; returns the raw token."""

    def make(
        *scopes: str, user: Any = None, revoked: bool = False, project: Project | None = None
    ) -> str:
        token, raw = issue_token(
            project=project or default_project(),
            name="test",
            scopes=scopes or ("ingest", "read"),
            user=user,
        )
        if revoked:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
        return raw

    return make


@pytest.fixture
def api(make_token: Callable[..., str]) -> ApiClient:
    """A client holding an ingest + read token."""
    return ApiClient(make_token("ingest", "read"))


@pytest.fixture
def reader(make_token: Callable[..., str]) -> ApiClient:
    """A client holding a read-only token."""
    return ApiClient(make_token("read"))


@pytest.fixture
def admin_api(make_token: Callable[..., str]) -> ApiClient:
    """A client holding an admin-scoped token (hidden threads, stopping any run)."""
    return ApiClient(make_token("admin"))


def error_of(response: Any) -> dict[str, Any]:
    """The error object of an error response, checking the shape."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    error: dict[str, Any] = body["error"]
    return error

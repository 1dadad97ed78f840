"""Who is calling the API: bearer tokens with scopes, or a logged-in browser session (read)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer

from transcripts.models import ApiToken

INGEST = "ingest"
READ = "read"
# Recording every use would add a write to every append; a minute of precision is plenty.
LAST_USED_PRECISION = timedelta(minutes=1)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller and what it may do."""

    name: str
    scopes: frozenset[str]
    is_staff: bool
    token_id: int | None = None
    # The project of a token; a browser session reads in the projects of its user.
    project_id: int | None = None
    user: Any = None

    def can(self, scope: str) -> bool:
        """Whether the caller holds scope."""
        return scope in self.scopes


def token_principal(raw_token: str) -> Principal | None:
    """The principal of a live (unrevoked) token, recording its use; None when unknown."""
    row = (
        ApiToken.objects.filter(token_hash=ApiToken.hash_token(raw_token), revoked_at__isnull=True)
        .values_list(
            "pk",
            "name",
            "scopes",
            "last_used_at",
            "user__is_staff",
            "user__is_active",
            "project_id",
        )
        .first()
    )
    if row is None:
        return None
    pk, name, scopes, last_used_at, user_is_staff, user_is_active, project_id = row
    if user_is_active is False:
        return None  # the token of a deactivated user stops working with the account
    now = timezone.now()
    if last_used_at is None or now - last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=pk).update(last_used_at=now)
    return Principal(
        name=name,
        scopes=frozenset(s for s in scopes if isinstance(s, str)),
        is_staff=bool(user_is_staff and user_is_active),
        token_id=pk,
        project_id=project_id,
    )


def session_principal(user: Any) -> Principal | None:
    """A logged-in user may read the API from the browser (never write: no CSRF exposure)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    return Principal(
        name=user.get_username(), scopes=frozenset({READ}), is_staff=user.is_staff, user=user
    )


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer …` header; '' for another scheme or no token."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def authenticate(request: HttpRequest, scope: str) -> Principal:
    """The caller holding scope, else AuthenticationError (401) or AuthorizationError (403)."""
    token = bearer_token(request)
    if token is not None:
        principal = token_principal(token) if token else None
    else:
        principal = session_principal(getattr(request, "user", None))
    if principal is None:
        raise AuthenticationError(401, "a valid API token is required (Authorization: Bearer …)")
    if not principal.can(scope):
        if token is None:
            raise AuthorizationError(
                403, f"a browser session may only read; this needs a token with the {scope!r} scope"
            )
        raise AuthorizationError(403, f"this token lacks the {scope!r} scope")
    return principal


class ApiAuth(HttpBearer):
    """Ninja auth: a bearer token with the given scope, or a browser session for reading."""

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def __call__(self, request: HttpRequest) -> Principal:
        return authenticate(request, self.scope)

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        """Unused: __call__ handles both tokens and sessions."""
        return token_principal(token)


read_auth = ApiAuth(READ)
ingest_auth = ApiAuth(INGEST)

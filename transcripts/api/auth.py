"""Who is calling the API: a bearer token of one project with scopes, or a logged-in browser
session (read-only). What the caller may do with a thread is decided in `api/access.py`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer
from ninja.utils import check_csrf

from transcripts.ledger.quotas import charge_token_request
from transcripts.ledger.tokens import record_token_use
from transcripts.models import ApiToken
from transcripts.permissions import READ, Principal, User

# Recording every use would add a write to every append; a minute of precision is plenty.
LAST_USED_PRECISION = timedelta(minutes=1)
# A browser session reads, in the projects where its user is a member.
SESSION_SCOPES = frozenset({READ})


def token_principal(raw_token: str) -> Principal | None:
    """The principal of a live (unrevoked) token, recording its use and charging the request
    to its quotas (QuotaExceeded past one); None when unknown."""
    # The lookup and the charge are one statement (ledger.quotas.charge_token_request); a
    # deactivated user's token is not charged.
    token = charge_token_request(ApiToken.hash_token(raw_token))
    if token is None or token.user_is_active is False:
        return None  # the token of a deactivated user stops working with the account
    scopes = token.scopes
    if isinstance(scopes, str):  # Django reads jsonb as text, for JSONField to parse
        scopes = json.loads(scopes)
    assert isinstance(scopes, list)
    now = timezone.now()
    last_used_at = token.last_used_at
    assert last_used_at is None or isinstance(last_used_at, datetime)
    if last_used_at is None or now - last_used_at > LAST_USED_PRECISION:
        record_token_use(token_id=token.id, at=now)
    return Principal(
        name=token.name,
        scopes=frozenset(s for s in scopes if isinstance(s, str)),
        token_id=token.id,
        project_id=token.project_id,
        project_limits=token.project_limits,
    )


def session_principal(user: User | None) -> Principal | None:
    """A logged-in user may read the API from the browser (never write: no CSRF exposure)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    return Principal(name=user.get_username(), scopes=SESSION_SCOPES, user=user)


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an `Authorization: Bearer …` header; '' for another scheme or no token."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def authenticate(request: HttpRequest, *, writes: bool, session_writes: bool = False) -> Principal:
    """The caller, else AuthenticationError (401); a browser session on an endpoint that
    writes is refused (403), unless the endpoint takes a member's writes (session_writes:
    experiments) and the request carries the session's CSRF token. Scopes are checked
    against the object reached (api/access.py): outside the token's project an object does
    not exist, whatever the scopes."""
    token = bearer_token(request)
    if token is not None:
        principal = token_principal(token) if token else None
    else:
        principal = session_principal(getattr(request, "user", None))
    if principal is None:
        raise AuthenticationError(401, "a valid API token is required (Authorization: Bearer …)")
    if writes and principal.is_session and session_writes:
        if check_csrf(request) is not None:
            raise AuthorizationError(
                403, "a browser session's write needs its CSRF token (the X-CSRFToken header)"
            )
    elif writes and principal.is_session:
        raise AuthorizationError(
            403, "a browser session may only read; this needs a token with the 'ingest' scope"
        )
    return principal


class ApiAuth(HttpBearer):
    """Ninja auth: a bearer token, or a browser session on the endpoints that only read."""

    def __init__(self, *, writes: bool, session_writes: bool = False) -> None:
        super().__init__()
        self.writes = writes
        self.session_writes = session_writes

    def __call__(self, request: HttpRequest) -> Principal:
        return authenticate(request, writes=self.writes, session_writes=self.session_writes)

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        """Unused: __call__ handles both tokens and sessions."""
        return token_principal(token)


read_auth = ApiAuth(writes=False)
ingest_auth = ApiAuth(writes=True)
# A token that ingests, or a member's browser session with its CSRF token (the endpoint then
# checks the member's role).
member_write_auth = ApiAuth(writes=True, session_writes=True)

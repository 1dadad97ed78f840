"""API tokens: issued for one project with scopes (shown once, stored hashed), revoked, and
their last use noted."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from transcripts.errors import InvalidInput
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import account_of, require
from transcripts.models import ApiToken, Project
from transcripts.permissions import User, project_access


def issue_token(
    *,
    name: str,
    scopes: Iterable[str],
    project: Project,
    user: User | None = None,
    actor: User | None = None,
) -> tuple[ApiToken, str]:
    """Create a token of project, for user's account when signed in; returns the stored record
    and the token itself (shown once, never kept). actor, when given, must administer the
    project; None is the command line."""
    name = (name or "").strip()
    longest = ApiToken._meta.get_field("name").max_length or 200
    if not name or len(name) > longest:
        raise InvalidInput(
            f"a token's name must have between 1 and {longest} characters", field="name"
        )
    chosen = sorted(set(scopes))
    unknown = [s for s in chosen if s not in ApiToken.SCOPES]
    if unknown or not chosen:
        raise InvalidInput(
            f"scopes must be among {', '.join(ApiToken.SCOPES)}, not {chosen}", field="scopes"
        )
    if actor is not None:
        require(project_access(actor, project).can_administer, "create tokens")
    raw = ApiToken.generate()
    with transaction.atomic():
        token = ApiToken.objects.create(
            name=name,
            project=project,
            prefix=raw[:10],
            token_hash=ApiToken.hash_token(raw),
            scopes=chosen,
            user=account_of(user),
        )
        if actor is not None:
            record_audit(actor, "create_token", token, project=project, name=name, scopes=chosen)
    return token, raw


def revoke_token(*, token: ApiToken, actor: User | None = None) -> ApiToken:
    """Revoke a token: it stops working at once (revoking twice changes nothing)."""
    if actor is not None:
        require(project_access(actor, token.project_id).can_administer, "revoke tokens")
    with transaction.atomic():
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
                revoked_at=token.revoked_at
            )
            if actor is not None:
                record_audit(actor, "revoke_token", token, project=token.project, name=token.name)
    return token


def record_token_use(*, token_id: int, at: datetime) -> None:
    """Note that the token was used at `at` (the API notes it at most once a minute)."""
    ApiToken.objects.filter(pk=token_id).update(last_used_at=at)

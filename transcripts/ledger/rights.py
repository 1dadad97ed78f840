"""The ledger's services refuse what the caller's access does not allow."""

from __future__ import annotations

from django.contrib.auth.models import User as Account

from transcripts.errors import PermissionDenied
from transcripts.permissions import User


def require(allowed: bool, action: str) -> None:
    """Refuse an action the caller's access does not allow."""
    if not allowed:
        raise PermissionDenied(f"you may not {action}", action=action)


def account_of(user: User | None) -> Account | None:
    """The signed-in user's account (a record to point at); None for nobody or anonymous."""
    return user if isinstance(user, Account) else None

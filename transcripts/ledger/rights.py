"""The ledger's services refuse what the caller's access does not allow."""

from __future__ import annotations

from transcripts.errors import PermissionDenied


def require(allowed: bool, action: str) -> None:
    """Refuse an action the caller's access does not allow."""
    if not allowed:
        raise PermissionDenied(f"you may not {action}", action=action)

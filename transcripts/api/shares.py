"""API router: shares (being built)."""

from __future__ import annotations

from ninja import Router

router = Router(tags=["shares"])

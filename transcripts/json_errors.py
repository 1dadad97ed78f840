"""The one JSON error shape of every refusal ({"error": {"code", "message", "details"}}):
the API's answers (`api/errors.py`) and the outage middleware's 503 under /api/ (`outage.py`)."""

from __future__ import annotations

from typing import Any


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error shape."""
    return {"error": {"code": code, "message": message, "details": details or {}}}

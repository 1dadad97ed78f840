"""Typed errors of the ledger; the API and the views turn them into responses."""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """Base of every refusal; carries an HTTP-like status, a code and details."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class NotFound(LedgerError):
    status = 404
    code = "not_found"


class InvalidInput(LedgerError):
    status = 422
    code = "invalid"


class Conflict(LedgerError):
    status = 409
    code = "conflict"


class SeqGap(Conflict):
    code = "seq_gap"


class SeqConflict(Conflict):
    code = "seq_conflict"


class RunClosed(Conflict):
    code = "run_closed"


class ThreadLocked(Conflict):
    code = "thread_locked"

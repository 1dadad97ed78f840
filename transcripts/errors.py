"""Every domain error, in one place (pure Python: formats and the projector import it too).

`DomainError` and its subclasses are refusals with an HTTP-like status, a code and details:
the API turns them into its JSON error shape, the views into a page or an htmx fragment. The
other errors belong to one input language each (events, formats, AI SDK streams, generators)
and are turned into an `InvalidInput` where they reach a caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class DomainError(Exception):
    """Base of every refusal; carries an HTTP-like status, a code and details."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class NotFound(DomainError):
    status = 404
    code = "not_found"


class PermissionDenied(DomainError):
    status = 403
    code = "forbidden"


class InvalidInput(DomainError):
    status = 422
    code = "invalid"


class InvalidJson(DomainError):
    status = 400
    code = "invalid_json"


class BodyTooLarge(DomainError):
    status = 413
    code = "too_large"


class UnsupportedMediaType(DomainError):
    status = 415
    code = "unsupported_media_type"


class Conflict(DomainError):
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


# --- errors of the input languages -----------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located by a path such as events[3].data.delta."""

    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class InvalidEvents(ValueError):
    """A batch holds events that may not be stored; nothing of it is stored."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{first.path}: {first.message}{more}")


class FormatError(ValueError):
    """Invalid input for a format, listing every problem found as (JSON path, message)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = list(problems)
        summary = "; ".join(f"{path}: {message}" for path, message in self.problems[:5])
        if len(self.problems) > 5:
            summary += f"; and {len(self.problems) - 5} more"
        super().__init__(summary or "invalid input")


class InvalidStream(ValueError):
    """A body is not an AI SDK UI message stream; problems are (path, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        path, message = problems[0]
        super().__init__(f"{path}: {message}")


class GeneratorError(Exception):
    """A generator could not produce its output (bad configuration, provider error)."""


class WorkerLost(Exception):
    """The worker running a task stopped (killed, crashed, or cut off from the database) before
    finishing it; recorded on the task rows it leaves behind once they are given up."""

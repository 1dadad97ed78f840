"""Helpers for the generation tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from transcripts.models import Run


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    """Poll predicate until it holds, or fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def run_status(run_id: str) -> str:
    """The current status of a run, read fresh from the database."""
    return Run.objects.values_list("status", flat=True).get(pk=run_id)

"""Live updates: each run has a LISTEN/NOTIFY channel told its last seq and status."""

from __future__ import annotations

import json

from django.db import connection

from transcripts.models import Run


def run_channel(run_id: str) -> str:
    """The LISTEN/NOTIFY channel of a run."""
    return f"transcripts_run_{run_id.lower()}"


def change_payload(run: Run) -> str:
    """What listeners of a run are told: its last seq and status."""
    return json.dumps({"lastSeq": run.last_seq, "status": run.status})


def notify(run: Run) -> None:
    """Tell the run's listeners about its change (delivered when the transaction commits)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [run_channel(run.id), change_payload(run)])

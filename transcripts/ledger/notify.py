"""Live updates: each run has a LISTEN/NOTIFY channel told its last seq and status."""

from __future__ import annotations

import json
from typing import TypedDict

from django.db import connection

from transcripts.models import Run


class RunStatusPayload(TypedDict):
    """What a run's listeners are told: its last seq and its status."""

    lastSeq: int
    status: str


def run_channel(run_id: str) -> str:
    """The LISTEN/NOTIFY channel of a run."""
    return f"transcripts_run_{run_id.lower()}"


def run_status_payload(last_seq: int, status: str) -> RunStatusPayload:
    """The run-status payload of a run at last_seq with status."""
    return {"lastSeq": last_seq, "status": status}


def change_payload(run: Run) -> str:
    """The run's status payload as the JSON text a notification carries."""
    return json.dumps(run_status_payload(run.last_seq, run.status))


def change_payload_sql(last_seq: str, status: str) -> str:
    """SQL spelling the JSON text of change_payload from two SQL expressions (for a
    notification whose status is only known inside the statement); % is doubled, for a
    query with parameters."""
    template = json.dumps(run_status_payload(0, "")).replace("0", "%%s").replace('""', '"%%s"')
    return f"format('{template}', {last_seq}, {status})"


def notify(run: Run) -> None:
    """Tell the run's listeners about its change (delivered when the transaction commits)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [run_channel(run.id), change_payload(run)])

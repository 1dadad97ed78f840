"""Live updates: each run has a LISTEN/NOTIFY channel told its last seq and status; each
project a channel told when one of its threads is created and when a run of one of them begins
or changes status (sent by the triggers of migration 0016_live, in the writing transaction)."""

from __future__ import annotations

import json
from typing import TypedDict

from django.db import connection

from transcripts.ids import uuid_to_ulid
from transcripts.models import Run


class RunStatusPayload(TypedDict):
    """What a run's listeners are told: its last seq and its status."""

    lastSeq: int
    status: str


def run_channel(run_id: str) -> str:
    """The LISTEN/NOTIFY channel of a run."""
    return f"transcripts_run_{run_id.lower()}"


def project_channel(project_id: int) -> str:
    """The LISTEN/NOTIFY channel of a project's threads and runs (named as the triggers do)."""
    return f"transcripts_project_{int(project_id)}"


class ProjectEvent(TypedDict):
    """What a project's live stream tells a page: a thread was created ("thread"), or a run of a
    thread began or changed status ("run"); ids as ULIDs, run and status empty for a thread."""

    kind: str
    thread: str
    run: str
    status: str
    hidden: bool


def project_event(payload: str) -> ProjectEvent | None:
    """The event a project channel's notification carries, or None for one not understood."""
    try:
        told = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(told, dict) or told.get("kind") not in ("thread", "run"):
        return None
    thread = uuid_to_ulid(told.get("thread"))
    run = uuid_to_ulid(told["run"]) if told.get("run") else ""
    if thread is None or run is None:
        return None
    status = told.get("status") or ""
    return {
        "kind": str(told["kind"]),
        "thread": thread,
        "run": run,
        "status": status if isinstance(status, str) else "",
        "hidden": told.get("hidden") is True,
    }


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

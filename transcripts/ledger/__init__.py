"""The ledger: the one way to write threads, runs, events and messages.

Every caller (API, views, admin, importers, generator workers) goes through these functions;
this package is a facade over modules with one job each:

- `threads.py`, `runs.py`: create a thread, begin a run;
- `append.py`: append events (the hot path); `bulk_copy.py`: COPY for many rows at once;
- `lifecycle.py`: commit, fail, cancel, stop (keeping what streamed), restore;
  `active_path.py`: move the active path;
- `leases.py`: generator workers' leases; `snapshots.py`: projection snapshots;
- `notify.py`: LISTEN/NOTIFY channels of runs and projects;
- `moderation.py`, `reports.py`, `audit.py`, `ratings.py`: moderators' and readers' writes;
- `import_plan.py`, `importing.py`: whole threads imported in one transaction;
- `llm_calls.py`: LLM calls decoded from OpenTelemetry spans recorded in the tree, exactly once;
- `shares.py`: share links to one branch (created, revoked, expiries audited);
- `scores.py`: feedback on answers, score configs and scores (issue 28).
"""

from __future__ import annotations

from transcripts.ledger.append import (
    AppendResult,
    OutOfReach,
    Reach,
    append_at_once,
    append_events,
)
from transcripts.ledger.bulk_copy import copy_messages
from transcripts.ledger.leases import claim_run, expire_leases, renew_lease
from transcripts.ledger.lifecycle import (
    cancel_run,
    commit_run,
    fail_run,
    restore_run,
    stop_run,
)
from transcripts.ledger.llm_calls import RecordedLlmCalls, record_llm_calls
from transcripts.ledger.notify import ProjectEvent, project_channel, project_event, run_channel
from transcripts.ledger.runs import HEAD, begin_run
from transcripts.ledger.shares import audit_expired_shares, create_share, revoke_share
from transcripts.ledger.snapshots import store_due_snapshots, store_snapshot, store_snapshot_if_due
from transcripts.ledger.threads import create_thread

__all__ = [
    "HEAD",
    "AppendResult",
    "OutOfReach",
    "ProjectEvent",
    "Reach",
    "RecordedLlmCalls",
    "append_at_once",
    "append_events",
    "audit_expired_shares",
    "begin_run",
    "cancel_run",
    "claim_run",
    "commit_run",
    "copy_messages",
    "create_share",
    "create_thread",
    "expire_leases",
    "fail_run",
    "project_channel",
    "project_event",
    "record_llm_calls",
    "renew_lease",
    "restore_run",
    "revoke_share",
    "run_channel",
    "stop_run",
    "store_due_snapshots",
    "store_snapshot",
    "store_snapshot_if_due",
]

"""Workers against faults, with real processes on a real PostgreSQL: a worker waits out an
outage; a killed worker's task is given back and its run completes on another worker; `serve`
restarts a killed worker."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import psycopg
from ulid import ULID

from tests.faults.stack import (
    Output,
    Stack,
    login,
    regenerate,
    served,
    started_run,
    wait_for,
)
from tests.live_server import LiveServer, free_port


def _uuid(run_id: str) -> str:
    return str(ULID.from_str(run_id).to_uuid())


def _error_code(stack: Stack, run_id: str) -> str | None:
    rows = stack.query("SELECT error->>'code' FROM transcripts_run WHERE id = %s", _uuid(run_id))
    return rows[0][0] if rows else None


def _task_of(stack: Stack, run_id: str) -> tuple[str, list[str]]:
    """(status, worker ids) of the generation task row of run_id."""
    rows = stack.query(
        "SELECT status, worker_ids FROM django_tasks_database_dbtaskresult"
        " WHERE task_path LIKE '%%generate_run' AND args_kwargs->'args'->>0 = %s",
        run_id,
    )
    assert len(rows) == 1, rows
    status, worker_ids = rows[0]
    return status, worker_ids


def test_a_worker_waits_out_an_outage_and_then_generates_again(
    processes: Stack, server: LiveServer
) -> None:
    stack = processes
    worker = stack.start_worker()
    browser = login(server.url, "editor", "editor-password")
    warm = started_run(regenerate(browser, stack))
    wait_for(lambda: stack.run_status(warm) == "committed", 20, "a first regeneration")
    # A slow answer (about 100 ms a token) is being generated when the database goes away.
    cut = started_run(regenerate(browser, stack, delayMs="100"))
    wait_for(lambda: stack.run_status(cut) == "streaming", 20, "the slow run to stream")

    stack.cluster.stop()
    time.sleep(2)  # the worker meets the outage in its loop, its lease and its generator
    assert worker.poll() is None, "the worker died with the database"
    stack.cluster.start()
    back_at = time.monotonic()
    # The run cut off mid-answer is failed (it cannot resume), not left streaming forever.
    wait_for(lambda: stack.run_status(cut) == "failed", 20, "the cut-off run to fail")
    assert _error_code(stack, cut) in ("database_unavailable", "lease_expired")
    after = started_run(served(lambda: regenerate(browser, stack)))
    wait_for(lambda: stack.run_status(after) == "committed", 20, "a regeneration after it")
    print(f"\na Regenerate sent after the outage committed {time.monotonic() - back_at:.2f} s")
    print("after the database started")
    assert worker.poll() is None


def test_a_killed_worker_s_task_is_given_back_and_its_run_completes_on_another_worker(
    processes: Stack, server: LiveServer
) -> None:
    stack = processes
    browser = login(server.url, "editor", "editor-password")
    run_id = started_run(regenerate(browser, stack))  # queued: no worker runs yet
    # Hold the run's row, so the first worker takes the task and then waits to claim the run:
    # killed there, it leaves a task row RUNNING and the run queued, with no lease to lapse.
    with psycopg.connect(stack.cluster.url) as holder:
        holder.execute("SELECT 1 FROM transcripts_run WHERE id = %s FOR UPDATE", (_uuid(run_id),))
        doomed = stack.start_worker()
        wait_for(
            lambda: (
                stack.query(
                    "SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                    " WHERE NOT l.granted AND c.relname = 'transcripts_run'"
                )
                or stack.query(
                    "SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
                )
            ),
            20,
            "the first worker to wait for the run",
        )
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait()
        holder.rollback()
    status, worker_ids = _task_of(stack, run_id)
    assert (status, len(worker_ids)) == ("RUNNING", 1)
    assert stack.run_status(run_id) == "queued"

    killed_at = time.monotonic()
    stack.start_worker()
    wait_for(lambda: stack.run_status(run_id) == "committed", 30, "the run to complete")
    print(f"\nthe killed worker's run committed {time.monotonic() - killed_at:.2f} s after")
    print("a second worker started")
    status, worker_ids = _task_of(stack, run_id)
    assert status == "SUCCESSFUL"
    assert len(worker_ids) == 2 and worker_ids[0] != worker_ids[1]


def _state(pid: int) -> str:
    """A process's state letter (Z: a zombie), or '' once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return ""
    return stat.rsplit(")", 1)[1].split()[0]


def test_serve_restarts_its_worker_when_it_is_killed(processes: Stack) -> None:
    stack = processes
    port = free_port()
    serve = stack.start(
        "manage.py", "serve", "--no-demo", "--host", "127.0.0.1", "--port", str(port), output=True
    )
    output = Output(serve)
    url = f"http://127.0.0.1:{port}"
    first = int(wait_for(lambda: output.find(r"worker, pid (\d+)"), 60, "serve's worker")[0])
    browser = login_when_up(url)

    os.kill(first, signal.SIGKILL)
    killed_at = time.monotonic()
    pids = wait_for(lambda: output.find(r"worker, pid (\d+)")[1:], 15, "a new worker")
    second = int(pids[0])
    print(f"\nserve started another worker {time.monotonic() - killed_at:.2f} s after the kill")
    assert second != first
    assert _state(first) == "", f"the killed worker was left as {_state(first)!r}"
    run_id = started_run(regenerate(browser, stack))
    wait_for(lambda: stack.run_status(run_id) == "committed", 20, "the new worker to generate")

    serve.send_signal(signal.SIGTERM)
    serve.wait(timeout=20)
    wait_for(lambda: _state(second) == "", 15, "serve to stop its worker")


def login_when_up(url: str) -> httpx.Client:
    """A logged-in browser, once the server at url answers."""

    def up() -> bool:
        try:
            return httpx.get(url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, 60, "serve to answer")
    return login(url, "editor", "editor-password")

"""The rules behind the outage handling, checked without stopping a database: what counts as
an outage, how it is described, the probes, the pauses between retries, and serve's
supervision of its worker."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import psycopg
import pytest
from django.db import IntegrityError, InterfaceError, OperationalError
from django.test import Client, RequestFactory
from psycopg import errors
from psycopg_pool import PoolTimeout

from transcripts.db_availability import Backoff, describe, is_outage
from transcripts.outage import OutageMiddleware
from transcripts.worker.supervisor import WorkerSupervisor


def _wrapped(cause: BaseException, kind: type[Exception] = OperationalError) -> Exception:
    """cause as Django raises it: its own exception class, the driver's one behind it."""
    try:
        try:
            raise cause
        except BaseException as exc:
            raise kind(str(exc)) from exc
    except Exception as django_error:
        return django_error


@pytest.mark.parametrize(
    "cause",
    [
        psycopg.OperationalError("connection failed: Connection refused"),
        psycopg.OperationalError("server closed the connection unexpectedly"),
        PoolTimeout("couldn't get a connection after 1.00 sec"),
        errors.AdminShutdown("terminating connection due to administrator command"),
        errors.CannotConnectNow("the database system is starting up"),
        errors.TooManyConnections("sorry, too many clients already"),
        psycopg.InterfaceError("the connection is closed"),
    ],
    ids=lambda cause: type(cause).__name__,
)
def test_an_unreachable_or_unserving_database_is_an_outage(cause: Exception) -> None:
    assert is_outage(cause)
    assert is_outage(_wrapped(cause))


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(errors.QueryCanceled("canceling statement due to statement timeout")),
        _wrapped(errors.DeadlockDetected("deadlock detected")),
        _wrapped(errors.UniqueViolation("duplicate key"), IntegrityError),
        ValueError("not a database error"),
    ],
    ids=lambda error: type(error.__cause__ or error).__name__,
)
def test_a_refused_statement_is_not_an_outage(error: Exception) -> None:
    assert not is_outage(error)


def test_a_closed_connection_as_django_reports_it_is_an_outage() -> None:
    assert is_outage(InterfaceError("connection already closed"))


def test_an_outage_is_described_in_a_line_without_the_server_s_address() -> None:
    refused = psycopg.OperationalError(
        'connection failed: connection to server on socket "/run/pg/.s.PGSQL.5432" failed:'
        " Connection refused\n\tIs the server running locally?"
    )
    assert describe(_wrapped(refused)) == "Connection refused"
    assert describe(PoolTimeout("couldn't get a connection after 1.00 sec")) == (
        "couldn't get a connection after 1.00 sec"
    )


@pytest.mark.django_db
def test_healthz_answers_without_touching_the_database(
    client: Client, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"ok": True})
    assert client.head("/healthz").status_code == 200


@pytest.mark.django_db
def test_readyz_answers_200_when_the_database_answers(client: Client) -> None:
    response = client.get("/readyz")
    assert (response.status_code, response.json()) == (200, {"ok": True, "database": "ok"})
    assert client.post("/readyz").status_code == 405


def _outage_in_an_inner_middleware(request: Any) -> Any:
    # What Django does with an exception raised below a middleware: its 500 handler answers,
    # after telling got_request_exception.
    from django.core.handlers.exception import convert_exception_to_response

    def session_save(request: Any) -> Any:
        raise _wrapped(psycopg.OperationalError("server closed the connection unexpectedly"))

    return convert_exception_to_response(session_save)(request)


@pytest.mark.parametrize("path", ["/t/x/", "/api/v1/threads"])
def test_an_outage_met_outside_a_view_is_a_503_too(path: str) -> None:
    response = OutageMiddleware(_outage_in_an_inner_middleware)(RequestFactory().get(path))
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    if path.startswith("/api/"):
        assert json.loads(response.content)["error"]["code"] == "unavailable"
    else:
        assert b"unavailable" in response.content


def test_a_500_for_another_reason_stays_a_500() -> None:
    def broken(request: Any) -> Any:
        from django.core.handlers.exception import convert_exception_to_response

        def view(request: Any) -> Any:
            raise ValueError("a bug")

        return convert_exception_to_response(view)(request)

    assert OutageMiddleware(broken)(RequestFactory().get("/")).status_code == 500


def test_pauses_double_up_to_a_bound_and_start_small_again_after_a_calm() -> None:
    backoff = Backoff(first=0.25, most=2.0, calm_after=0.05)
    delays = [backoff.next_delay() for _ in range(6)]
    nominal = [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert all(0.8 * n <= d <= 1.2 * n for d, n in zip(delays, nominal, strict=True))
    time.sleep(0.06)
    assert backoff.next_delay() <= 0.25 * 1.2


class _QuickSupervisor(WorkerSupervisor):
    FIRST_PAUSE = 0.05


def test_serve_s_supervisor_restarts_a_worker_that_exits_pausing_longer_each_time() -> None:
    said: list[str] = []
    supervisor = _QuickSupervisor([sys.executable, "-c", "raise SystemExit(3)"], say=said.append)
    supervisor.start()
    deadline = time.monotonic() + 20
    while sum("exited" in line for line in said) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    supervisor.stop()
    exits = [line for line in said if "exited" in line]
    for line, pause in zip(exits[:3], ("0.05", "0.1", "0.2"), strict=True):
        assert line.endswith(f"exited with code 3; starting another in {pause} s."), line
    started = [line for line in said if line.startswith("Started a generation worker")]
    assert len(set(started)) == len(started) >= 3  # a new process (pid) each time
    assert supervisor.process is not None and supervisor.process.poll() is not None

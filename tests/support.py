"""Helpers shared by test packages."""

from __future__ import annotations

from django.db import connection


def database_url_of_tests() -> str:
    """The URL of the database the tests run on (pytest-django's test database)."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    host = db["HOST"]
    if host.startswith("/"):
        return f"postgresql://{auth}@/{db['NAME']}?host={host}"
    return f"postgresql://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"

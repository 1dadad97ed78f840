"""Django's PostgreSQL backend, which first waits for an embedded cluster still starting.

A fresh clone's cluster is created on a thread while Django loads (config/database.py); the
first connection, whichever code asks for it, waits here until the server is up.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base

from config.database import wait_for_embedded_cluster


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        wait_for_embedded_cluster()
        return super().get_new_connection(conn_params)

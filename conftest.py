"""Test set-up: a throwaway embedded PostgreSQL unless DATABASE_URL is given."""

from __future__ import annotations

import os

if not os.environ.get("DATABASE_URL"):
    from config.database import throwaway_database_url

    # Set before Django reads its settings, so the tests and any subprocess they start use it.
    os.environ["DATABASE_URL"] = throwaway_database_url()

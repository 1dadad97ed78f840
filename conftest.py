"""Test set-up.

Without DATABASE_URL the tests run on a throwaway embedded PostgreSQL, started by
config.database when the settings load under pytest (pytest-django loads them before any
conftest), and deleted when the test run ends.
"""

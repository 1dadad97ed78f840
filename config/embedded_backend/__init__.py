"""Django's PostgreSQL backend for the embedded development cluster (config/database.py)."""

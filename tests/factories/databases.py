"""Fresh PostgreSQL databases for tests that start processes of their own (workers, manage.py).

They live on the test server: CDC_TEST_DATABASE_URL's (CI's PostgreSQL) when set, else the
embedded PostgreSQL that the tests' own database is on (cdcweb/embedded_db.py).
"""

from __future__ import annotations

import os

import psycopg
from django.conf import settings

from cdcweb import embedded_db


def admin_url() -> str:
    """Return a URL of the test server's maintenance database, to create and drop databases with."""
    return os.environ.get("CDC_TEST_DATABASE_URL") or embedded_db.url(settings.VAR_DIR, "postgres")


def create_database(purpose: str) -> str:
    """Create an empty database named after the purpose and this process; return its URL."""
    base, _, _ = admin_url().rpartition("/")
    name = f"test_{purpose}_{os.getpid()}"
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


def drop_database(url: str) -> None:
    """Drop a database create_database made (its connections are ended)."""
    name = url.rpartition("/")[2]
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

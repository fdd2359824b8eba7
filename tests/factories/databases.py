"""Fresh PostgreSQL databases for tests that start processes of their own (workers, manage.py).

They live on the test server: CDC_TEST_DATABASE_URL's (CI's PostgreSQL) when set, else the
embedded PostgreSQL that the tests' own database is on (cdcweb/embedded_db.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from django.conf import settings

from cdcweb import embedded_db


def admin_url() -> str:
    """Return a URL of the test server's maintenance database, to create and drop databases with."""
    return os.environ.get("CDC_TEST_DATABASE_URL") or embedded_db.url(settings.VAR_DIR, "postgres")


ROOT = Path(__file__).resolve().parents[2]


def create_database(purpose: str, template: str | None = None) -> str:
    """Create a database named after the purpose and this process; return its URL.

    Empty, or a copy of `template` (a database URL on the same server, nobody connected to it).
    """
    base, _, _ = admin_url().rpartition("/")
    name = f"test_{purpose}_{os.getpid()}"
    copy = f' TEMPLATE "{template.rpartition("/")[2]}"' if template else ""
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return f"{base}/{name}"


def migrate(url: str, var_dir: Path) -> None:
    """Run `manage.py migrate` on the database at url, in a process of its own, as the workers would."""
    env = {**os.environ, "DATABASE_URL": url, "CDC_VAR_DIR": str(var_dir)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"manage.py migrate exited {done.returncode}:\n{done.stderr[-3000:]}")


def is_migrated(url: str) -> bool:
    """Return whether the database at url has been migrated (it has Django's migration table)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT to_regclass('django_migrations') IS NOT NULL").fetchone()[0]


def drop_database(url: str) -> None:
    """Drop a database create_database made (its connections are ended)."""
    name = url.rpartition("/")[2]
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

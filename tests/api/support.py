"""Shared by tests/api and tests/ops: the PostgreSQL switch and role-holding users.

With CDC_TEST_DATABASE_URL set (CI), the tests of a directory that uses
`django_db_setup` from here run against a fresh, migrated PostgreSQL database
created beside that URL's database, and dropped afterwards; without it they use
pytest-django's SQLite test database.
"""

from __future__ import annotations

import os

import pytest
from django.core.management import call_command
from django.db import connections

from cdcweb.settings import database_config


def token_for(user) -> str:
    """Return a new API token of the user (knox stores only its digest)."""
    from knox.models import AuthToken

    return AuthToken.objects.create(user=user)[1]


def point_default_at(settings_dict: dict) -> dict:
    """Make the default connection use settings_dict; return the settings it had."""
    connections["default"].close()
    old = dict(connections["default"].settings_dict)
    connections["default"].settings_dict.clear()
    connections["default"].settings_dict.update(settings_dict)
    del connections["default"]  # the next use builds a wrapper for the (maybe other) engine
    return old


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(scope="package")
def django_db_setup(django_db_setup, django_db_blocker):
    """Use a fresh PostgreSQL database for this directory's tests when CDC_TEST_DATABASE_URL is set."""
    url = os.environ.get("CDC_TEST_DATABASE_URL", "")
    if not url:
        yield
        return
    base, _, name = url.rpartition("/")
    fresh = f"{name}_api_{os.getpid()}"
    _admin(url, f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')
    _admin(url, f'CREATE DATABASE "{fresh}"')
    with django_db_blocker.unblock():
        target = database_config(f"{base}/{fresh}", None)
        old = point_default_at(
            {**connections["default"].settings_dict, "OPTIONS": {}, **target, "CONN_MAX_AGE": 0}
        )
        call_command("migrate", verbosity=0, interactive=False)
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            point_default_at(old)
        _admin(url, f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')

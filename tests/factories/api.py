"""Support of the API and operations tests: the PostgreSQL switch, the fake tasks, tokens.

With CDC_TEST_DATABASE_URL set (CI), the tests of a folder (or module) that imports
`django_db_setup` from here run against a fresh, migrated PostgreSQL database created
beside that URL's database; without it they use the tests' own database. There being no
package in tests/, pytest keeps this "package" fixture until the session ends: the tests
that run after them stay on that database, which is dropped at the end. The API
folders' conftest.py files also import `sent_tasks`, so that the actions of their tests
enqueue nothing real. Users, token clients and the stream come from tests/conftest.py.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

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


class FakeTask:
    """Stand-in for a Celery task: records the ids it was sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def delay(self, stream_id: int) -> None:
        self.sent.append(stream_id)


@pytest.fixture(autouse=True)
def sent_tasks(monkeypatch):
    """Replace partitions.pipeline.tasks with fakes: actions enqueue nothing real during API tests."""
    fake = SimpleNamespace(start_stream_task=FakeTask(), drain_stream_task=FakeTask())
    monkeypatch.setitem(sys.modules, "partitions.pipeline.tasks", fake)
    return fake


def stream_body(**fields) -> dict:
    """Return a valid body to create a stream."""
    return {
        "name": "payments",
        "project": "p",
        "instance": "i",
        "database": "d",
        "change_stream": "Payments",
        "dialect": "googlesql",
        "heartbeat_ms": 2000,
        "start_at": "2026-01-01T00:00:00Z",
        **fields,
    }

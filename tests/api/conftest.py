"""Fixtures of the API tests: users in each role, token clients, streams with partitions."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from streams.roles import OPERATORS, VIEWERS, ensure_roles
from tests.api.support import django_db_setup, token_for  # noqa: F401 - PostgreSQL when CDC_TEST_DATABASE_URL is set
from tests.factories.datastream import at_sim, ds_watch_sim, pick  # noqa: F401 - watched streams
from tests.factories.lineage import make_stream

ROLES = ("anonymous", "viewer", "operator", "superuser")


class FakeTask:
    """Stand-in for a Celery task: records the ids it was sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def delay(self, stream_id: int) -> None:
        self.sent.append(stream_id)


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Hash test passwords with MD5: the real hasher costs about a second per user here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def sent_tasks(monkeypatch):
    """Replace partitions.pipeline.tasks with fakes: actions enqueue nothing real during API tests."""
    fake = SimpleNamespace(start_stream_task=FakeTask(), drain_stream_task=FakeTask())
    monkeypatch.setitem(sys.modules, "partitions.pipeline.tasks", fake)
    return fake


def _user(name: str, group: str | None = None, **flags) -> User:
    user = User.objects.create_user(name, password="pw", **flags)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def users(db) -> dict[str, User | None]:
    """Return one user per role (None for anonymous)."""
    ensure_roles(apps)
    return {
        "anonymous": None,
        "viewer": _user("vera", VIEWERS),
        "operator": _user("otto", OPERATORS),
        "superuser": _user("root", is_superuser=True, is_staff=True),
    }


@pytest.fixture
def client_as(users):
    """Return a factory: an APIClient authenticated with the role's token (or anonymous)."""

    tokens: dict[str, str] = {}

    def make(role: str) -> APIClient:
        client = APIClient()
        if users[role] is not None:
            if role not in tokens:
                tokens[role] = token_for(users[role])
            client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[role]}")
        return client

    return make


@pytest.fixture
def operator(client_as) -> APIClient:
    """Return an operator's token client."""
    return client_as("operator")


@pytest.fixture
def viewer(client_as) -> APIClient:
    """Return a viewer's token client."""
    return client_as("viewer")


@pytest.fixture
def stream(db):
    """Return a RUNNING stream with 40 partitions (splits and merges) and an hour of lag samples."""
    return make_stream("orders", 40, lag_days=1 / 24)


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

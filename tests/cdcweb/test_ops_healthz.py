"""/healthz: 200 when the database and the broker answer, 503 with "fail" for what is down, never why."""

from __future__ import annotations

import logging

from cdcweb import ops
from tests.factories.ops import _fresh_health, django_db_setup  # noqa: F401 - the operations tests' fixtures


def test_healthz_is_ok_without_login(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}


def test_an_unreachable_broker_is_503_naming_the_broker_but_not_the_error(client, db, settings, caplog):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    with caplog.at_level(logging.WARNING, logger="cdcweb.ops"):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "broker": "fail"}
    assert "127.0.0.1" not in response.content.decode()
    assert "the broker does not answer" in caplog.text  # the reason is in the log instead


def test_a_broken_database_is_503_without_the_exception_text(client, db, monkeypatch):
    class Down:
        def cursor(self):
            raise RuntimeError("connection refused by db.internal:5432 as user cdc")

    monkeypatch.setattr(ops, "connection", Down())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "fail", "broker": "ok"}
    assert "db.internal" not in response.content.decode()


def test_probes_within_a_few_seconds_reuse_the_last_check(client, db, monkeypatch):
    # given a healthy answer just given
    assert client.get("/healthz").status_code == 200
    calls = []
    monkeypatch.setattr(ops, "check_database", lambda: calls.append("db") or False)
    # when probes keep coming within the period, then the dependencies are not checked again
    for _ in range(20):
        assert client.get("/healthz").status_code == 200
    assert calls == []
    # and once it is over, the next probe checks again
    monkeypatch.setattr(ops.HEALTH, "_at", ops.HEALTH._at - ops.HEALTH_CACHE_SECONDS)
    assert client.get("/healthz").status_code == 503
    assert calls == ["db"]

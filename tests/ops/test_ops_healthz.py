"""/healthz: 200 when the database and the broker answer, 503 naming what is down."""

from __future__ import annotations


def test_healthz_is_ok_without_login(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}


def test_an_unreachable_broker_is_503_naming_the_broker(client, db, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "ok"
    assert body["broker"].startswith("error")


def test_a_broken_database_is_503_naming_the_database(client, db, monkeypatch):
    from cdcweb import ops

    class Down:
        def cursor(self):
            raise RuntimeError("connection refused")

    monkeypatch.setattr(ops, "connection", Down())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "error: connection refused"

"""/api/v1/ answers with the API's root: a link to each resource, each of which answers."""

from __future__ import annotations

from tests.factories.api import django_db_setup, sent_tasks  # noqa: F401 - PostgreSQL in CI; no real tasks


def test_the_root_links_every_resource(viewer, db):
    answer = viewer.get("/api/v1/")
    assert answer.status_code == 200
    links = answer.json()
    assert {"streams", "partitions", "reports", "token"} <= set(links)
    assert links["streams"] == "http://testserver/api/v1/streams/"
    for name in ("streams", "partitions", "reports"):
        assert viewer.get(links[name]).status_code == 200, name


def test_the_root_asks_anonymous_clients_to_authenticate(client_as):
    answer = client_as("anonymous").get("/api/v1/")
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == "Token"

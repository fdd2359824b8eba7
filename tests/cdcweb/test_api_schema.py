"""The OpenAPI schema holds: schemathesis fuzzes every operation as an operator, no 5xx, bodies conform.

It sends data that fits the schema and data that does not (negative mode): neither
may get a 500. (Lenient parsing, such as django-filter reading ?stalled=null as "any",
is allowed: only server errors fail.)
"""

from __future__ import annotations

import orjson
import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode, checks

from tests.factories.api import django_db_setup, sent_tasks, token_for  # noqa: F401 - PostgreSQL in CI; no real tasks
from tests.factories.lineage import make_lineage_stream

# Kept small so the whole schema runs in well under a minute on a loaded 2-core machine.
MAX_EXAMPLES = 5


def _load_schema():
    """Return the schema the /api/schema/ view serves (it needs a login), called in-process through WSGI.

    Django's own handler, not cdcweb.wsgi: that one refuses the development secret key.
    """
    document = orjson.loads(
        orjson.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str)
    )
    loaded = schemathesis.openapi.from_dict(document)
    loaded.app, loaded.location = WSGIHandler(), "/api/schema/"
    loaded.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
    return loaded


# Loaded once at collection (generating the schema needs no database).
schema = _load_schema()


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """Stop the WSGI handler closing the connection after each request, as Django's test client does.

    Otherwise, on PostgreSQL, the first request closes the connection that holds the
    test's transaction and every later query fails.
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def operator_token(users) -> str:
    """Return the operator's API token, with a stream of partitions to find (id 1 is likely hit)."""
    make_lineage_stream("orders", 12, lag_days=1 / 24)
    return token_for(users["operator"])


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_operation_conforms_to_the_schema(db, case, operator_token):
    case.call_and_validate(
        headers={"Authorization": f"Token {operator_token}"},
        checks=[
            checks.not_a_server_error,
            checks.response_schema_conformance,
            checks.content_type_conformance,
        ],
    )


def test_the_docs_page_loads_its_code_from_our_static_files(client, users):
    client.force_login(users["viewer"])
    page = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page
    assert "cdn" not in page.lower()
    assert "unpkg" not in page.lower()
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 200


def test_the_schema_and_docs_need_a_login(client, db):
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 401
    docs = client.get("/api/docs/")
    assert docs.status_code == 302
    assert docs["Location"].startswith("/login/")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/streams/{id}/pause/", {}),
        ("/api/v1/streams/{id}/backfill/", {"object": "orders", "action": "start"}),
    ],
)
def test_an_accepted_operation_and_its_url_conform_to_the_schema(db, operator_token, make_stream, path, body):
    # given a watched stream (its actions answer 202 with the operation; nothing reaches Datastream here)
    connection = {
        "project": "demo-project",
        "location": "us-central1",
        "stream_id": "ds",
        "log_retention_hours": 168,
    }
    stream = make_stream(name="ds", source_kind="datastream", state="RUNNING", connection=connection)
    headers = {"Authorization": f"Token {operator_token}"}
    validating = [
        checks.not_a_server_error,
        checks.status_code_conformance,
        checks.response_schema_conformance,
    ]
    # when an operator acts, then the 202 answer is the one the schema documents
    case = schema[path]["POST"].Case(
        path_parameters={"id": stream.pk}, body=body, media_type="application/json"
    )
    response = case.call(headers=headers)
    assert response.status_code == 202, response.text
    case.validate_response(response, checks=validating)
    # and so is the operation its url points to
    operation = response.json()["id"]
    follow = schema["/api/v1/streams/{stream_pk}/operations/{id}/"]["GET"].Case(
        path_parameters={"stream_pk": stream.pk, "id": operation}
    )
    followed = follow.call(headers=headers)
    assert followed.status_code == 200, followed.text
    follow.validate_response(followed, checks=validating)
